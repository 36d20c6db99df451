"""The pods of a list page, projected straight from their bytes, each repeating part once.

Cold start decodes and projects every pod of the cluster (150,000 at 5k nodes) before the
first cycle. Through ``wire``'s dicts and ``projection.project_pod`` that cost about 300 µs a
pod, nearly all of it repeated work: the pods of one ReplicaSet send byte-identical
resources, tolerations, affinity, labels and owner references, and ``Fraction`` arithmetic
for their requests and QoS ran again for every one of them.

Here a pod is decoded into a struct that names only what the projection reads
(``item``), and every sub-object that repeats across pods stays a raw slice of the
bytes (``msgspec.Raw``). Each part is first compared with the previous pod's (a list in key
order has the pods of one owner together); if it differs, its bytes key a memo; on a miss
the part is decoded and computed by the exact rules (``rules``: the functions of
``projection`` and ``agent.kubesemantics.qos``, on the same dicts ``wire`` would have made). Equal
bytes give equal results, so the projection is the exact one by construction; tests compare
the two paths on every pod of the parity fixture and on odd pods. Memoized values are shared
between pods, which is what ``sharing`` would do afterwards, so pods from here skip it.

Only what the policy reads is made: without a plugin that reads the pod-state details
(``with_status=False``), the container statuses are skipped while parsing and a pod's
conditions are read only for Ready (and, unbound, for when it became Unschedulable).

The page is cut into items by a byte search checked by the decoder (``pagesplit``), or
parsed into raw slices when it is not compact, and each item is decoded only when its turn
comes. Decoding the page in one pass, straight into structs, would scan each byte once, but
every struct then lives until its pod is projected (about 2.3 KiB each): at 150,000 pods the
peak RSS of the 5k-node benchmark went from about 560 to 900 MiB, and the fill was no
faster. Memory is what a descheduler is sized by, so the page stays bytes.

Watch events stay on the dict path (``wire`` + ``projection``): they arrive one at a time.

Concurrency: one ``PodListProjector`` per pod cache, used only by its watch thread.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from sys import intern
from typing import Any, TypeVar

import msgspec

from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist.item import (
    EMPTY_META,
    EMPTY_SPEC,
    EMPTY_STATUS,
    NULL,
    ItemMeta,
    ItemSpec,
    ItemStatus,
    ItemVolume,
    LeanItemStatus,
    LeanPodItem,
    PodItem,
)
from agent.descheduler.cache.podlist.pagesplit import CompactPage, compact_page, pieces
from agent.descheduler.cache.podlist.rules import (
    NO_ANNOTATIONS,
    NO_VOLUMES,
    StatusKey,
    annotation_facts,
    decode_shaped,
    exact_requests_and_qos,
    first_ready,
    owner_refs_of,
    pending_extra,
    status_info,
    volume_facts,
)
from agent.descheduler.cache.shapes import AFFINITY, INT32_MAX, SPREAD, TOLERATIONS
from agent.descheduler.model.cluster import OwnerRef, PodInfo
from agent.descheduler.model.keys import SPREAD_CONSTRAINTS
from agent.descheduler.model.podstatus import STATUS, PodStatusInfo
from agent.descheduler.model.values import EMPTY_MAP
from agent.kube.reflector import Unprojected
from agent.kubesemantics.wellknown import READY

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

INT32_MIN = -INT32_MAX - 1
_MISSING: Any = object()
"""A memo miss, told apart from memoized values that are empty or ``None``."""


_ContainersKey = tuple[Any, ...]
_ContainersPart = tuple[Mapping[str, int], str, tuple[str, ...]]
_TemplateKey = tuple[Any, ...]
_TemplatePart = tuple[
    Mapping[str, str],
    tuple[Mapping[str, Any], ...],
    Any,
    Mapping[str, int],
    str,
    tuple[str, ...],
]


class _Memo(dict[K, V]):
    """A dict that starts over past ``limit`` entries, so churn cannot grow it without bound."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def remember(self, key: K, value: V) -> V:
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


_LABELS = msgspec.json.Decoder(dict[str, str] | None)


class PodListProjector:
    """``decode_page`` yields each pod's ``(key, PodInfo)``; ``project`` makes one item's.

    ``with_status=False`` is for a policy whose plugins never read the pod-state details
    (``podstatus``): the container statuses are skipped while parsing and no
    ``PodStatusInfo`` is made, only the Ready condition (and, for a pod bound to no node,
    when it became Unschedulable) is read. ``projection.project_pod(with_status=False)`` is the
    same projection.
    """

    def __init__(self, *, with_status: bool = True, limit: int = 200_000) -> None:
        page = msgspec.defstruct(
            "PodItemList",
            [("metadata", Any, None), ("items", list[msgspec.Raw] | None, None)],
        )
        self._page: msgspec.json.Decoder[Any] = msgspec.json.Decoder(page)
        self.with_status = with_status
        self._item: msgspec.json.Decoder[LeanPodItem] = msgspec.json.Decoder(
            PodItem if with_status else LeanPodItem
        )
        self._templates: _Memo[_TemplateKey, _TemplatePart] = _Memo(limit)
        self._containers: _Memo[_ContainersKey, _ContainersPart] = _Memo(limit)
        self._maps: _Memo[bytes, Mapping[str, str]] = _Memo(limit)
        self._owners: _Memo[bytes, tuple[OwnerRef, ...]] = _Memo(limit)
        self._tolerations: _Memo[bytes, tuple[Mapping[str, Any], ...]] = _Memo(limit)
        self._affinity: _Memo[bytes, Any] = _Memo(limit)
        # Statuses are equal across pods that started in the same rhythm (condition times
        # are kept relative to creation): one copy of each, and of each ``extra`` holding it.
        self._statuses: _Memo[StatusKey, PodStatusInfo | None] = _Memo(limit)
        self._extras: _Memo[tuple[bytes, bool, StatusKey | None], Mapping[str, Any]] = _Memo(limit)
        # Times repeat in bursts (a rollout's pods share their second), not across the
        # cluster: a small table, or it would hold a float per pod.
        self._times: _Memo[str, float | None] = _Memo(4096)
        self._last = _Last()

    # -- decoding ------------------------------------------------------------------

    def decode_page(self, data: bytes) -> dict[str, Any]:
        """The page, its ``entries`` a one-pass iterator of ``(key, PodInfo)`` made one at
        a time (``Unprojected`` for a pod whose projection failed).

        A compact page is cut into its items by a byte search (``pagesplit``); any other,
        or one whose cut fails its check, is parsed to find them.
        """
        layout = compact_page(data) if type(data) is bytes else None
        if layout is not None:
            try:
                page: Any = self._page.decode(layout.head)
            except msgspec.DecodeError:
                layout = None
        raws: list[Any] = []
        if layout is None:
            page = self._page.decode(data)
            raws = page.items or []
            page.items = None
        metadata = page.metadata if isinstance(page.metadata, dict) else {}
        return {"metadata": metadata, "entries": self._entries(data, layout, raws)}

    def decode_item(self, data: bytes) -> LeanPodItem:
        """One pod's bytes (an item of a List read from a file), as a page item would be."""
        return self._item.decode(data)

    def _entries(
        self, data: bytes, layout: CompactPage | None, raws: list[Any]
    ) -> Iterator[tuple[str, PodInfo] | Unprojected]:
        project = self.project
        try:
            for item in self._items(data, layout, raws):
                metadata = item.metadata or EMPTY_META
                name = metadata.name or ""
                key = f"{metadata.namespace}/{name}" if metadata.namespace else name
                try:
                    value = project(item)
                except Exception as error:  # noqa: BLE001 - one odd pod must not stop the cache
                    yield Unprojected(key, str(error))
                    continue
                yield key, value
        finally:
            # The last pod's parts are slices of this page: let the page go with it.
            self._last = _Last()

    def _items(
        self, data: bytes, layout: CompactPage | None, raws: list[Any]
    ) -> Iterator[LeanPodItem]:
        """Each item decoded: from the cut pieces while they decode whole, then (or from
        the start, without a layout) from the parsed page's raw slices."""
        decode = self._item.decode
        if layout is not None:
            done = 0
            for piece in pieces(data, layout):
                try:
                    item = decode(piece)
                except msgspec.DecodeError:
                    break  # not cut where an item ends (see ``pagesplit``)
                done += 1
                yield item
            else:
                return
            raws = self._page.decode(data).items or []
            del raws[:done]
        for index, raw in enumerate(raws):
            raws[index] = None  # the slice goes as soon as its item is decoded
            yield decode(raw)

    # -- projecting ----------------------------------------------------------------

    @staticmethod
    def key(item: LeanPodItem) -> str:
        """``namespace/name``, as ``object_key`` gives for the dict."""
        metadata = item.metadata or EMPTY_META
        name = str(metadata.name or "")
        return f"{metadata.namespace}/{name}" if metadata.namespace else name

    def project(self, item: LeanPodItem) -> PodInfo:
        """``projection.project_pod`` of the same pod, with repeating parts memoized.

        The lookups are written out here and in ``_repeated`` rather than called through
        a method per field: this runs once per pod of the cluster at cold start, where a
        Python call per field cost more than the lookups themselves.
        """
        metadata = item.metadata or EMPTY_META
        spec = item.spec or EMPTY_SPEC
        status = item.status or EMPTY_STATUS
        namespace = intern(metadata.namespace or "")
        name = metadata.name or ""
        annotations = metadata.annotations
        kept, mirror, static = annotation_facts(annotations) if annotations else NO_ANNOTATIONS
        labels, owners, template = self._repeated(metadata, spec, status)
        node_selector, tolerations, affinity, requests, qos, images = template
        times = self._times
        stamp = metadata.creation_timestamp or ""
        created = times.get(stamp, _MISSING)
        if created is _MISSING:
            created = self._time(stamp, "metadata.creationTimestamp")
        created = created or 0.0
        status_key: StatusKey | None = None
        pod_status: PodStatusInfo | None = None
        if self.with_status:
            status_key, pod_status, ready = self._status(status, created)  # type: ignore[arg-type]  # the full decoder's
        else:
            ready = first_ready(status.conditions) if status.conditions else False
        spread = spec.topology_spread_constraints
        if pod_status is None and spread == NULL and not spec.resource_claims:
            extra = EMPTY_MAP  # most pods: nothing beyond the common fields
        else:
            extra = self._extra(spec, status_key, pod_status)
        if not spec.node_name:
            extra = pending_extra(extra, status)
        local_storage, claims = self._volume_facts(spec.volumes) if spec.volumes else NO_VOLUMES
        priority = spec.priority
        if priority is not None and not INT32_MIN <= priority <= INT32_MAX:
            projection.checked_int32(priority, "spec.priority")  # raises, with the reason
        started = status.start_time
        if started:
            start_time = times.get(started, _MISSING)
            if start_time is _MISSING:
                start_time = self._time(started, "status.startTime")
        else:
            start_time = None
        # Positional, in ``PodInfo``'s field order: a Struct matches keywords against its
        # 25 field names one by one, which cost ~2 us a pod, five times the positional call.
        # A swapped field fails the test that compares this path with ``projection``.
        return PodInfo(
            namespace,
            name,
            metadata.uid or f"{namespace}/{name}",  # uid
            intern(spec.node_name or ""),  # node_name
            intern(status.phase or ""),  # phase
            owners,
            requests,
            images,
            labels,
            kept or EMPTY_MAP,  # annotations
            priority,
            qos,
            ready,
            bool(metadata.deletion_timestamp),  # deleting
            created,  # creation_timestamp
            start_time,
            intern(spec.priority_class_name or ""),  # priority_class_name
            mirror,
            static,
            node_selector,
            affinity,
            tolerations,
            local_storage,
            claims,  # pvc_claims
            extra,
        )

    def _repeated(
        self, metadata: ItemMeta, spec: ItemSpec, status: LeanItemStatus
    ) -> tuple[Mapping[str, str], tuple[OwnerRef, ...], _TemplatePart]:
        """The labels, owners and template parts: the previous pod's where its parts are
        equal, byte for byte, else from their memos.

        A list in key order (from etcd, or from a watch cache that keeps its keys sorted)
        has the pods of one owner one after another, so most pods need no copy and no hash
        of their parts. In any other order the comparison fails at its first part and the
        memos answer: the result is the same either way.
        """
        last = self._last
        labels_raw = metadata.labels
        if labels_raw == last.labels_raw:
            labels = last.labels
        else:
            labels_bytes = bytes(labels_raw)
            labels = self._maps.get(labels_bytes, _MISSING)
            if labels is _MISSING:
                labels = self._new_map(labels_bytes)
            last.labels_raw, last.labels = labels_raw, labels
        owners_raw = metadata.owner_references
        if owners_raw == last.owners_raw:
            owners = last.owners
        else:
            owners_bytes = bytes(owners_raw)
            found = self._owners.get(owners_bytes)
            owners = (
                found
                if found is not None
                else self._owners.remember(owners_bytes, owner_refs_of(owners_bytes))
            )
            last.owners_raw, last.owners = owners_raw, owners
        containers = spec.containers
        init_containers = spec.init_containers
        # Every part a pod template repeats, compared as parsed (raw slices compare by
        # their bytes); labels and owners stay apart: a StatefulSet's pods each have their
        # own labels, and every ReplicaSet its own owner reference.
        probe = (
            spec.node_selector,
            spec.tolerations,
            spec.affinity,
            containers,
            init_containers,
            spec.overhead,
            spec.resources,
            status.qos_class,
        )
        if probe == last.probe:
            return labels, owners, last.template
        template_key: _TemplateKey = (
            bytes(spec.node_selector),
            bytes(spec.tolerations),
            bytes(spec.affinity),
            tuple([(bytes(c.resources), c.image) for c in containers]) if containers else (),
            tuple([(bytes(c.resources), c.restart_policy) for c in init_containers])
            if init_containers
            else (),
            bytes(spec.overhead),
            bytes(spec.resources),
            status.qos_class,
        )
        template = self._templates.get(template_key)
        if template is None:
            template = self._templates.remember(
                template_key, self._template(template_key, spec, status)
            )
        last.probe, last.template = probe, template
        return labels, owners, template

    def _template(self, key: _TemplateKey, spec: ItemSpec, status: LeanItemStatus) -> _TemplatePart:
        """The parts of a template not seen whole before, each through its own memo, so
        templates that differ in one part still share the others."""
        selector_bytes, tolerations_bytes, affinity_bytes = key[:3]
        node_selector = self._maps.get(selector_bytes, _MISSING)
        if node_selector is _MISSING:
            node_selector = self._new_map(selector_bytes)
        tolerations = self._tolerations.get(tolerations_bytes)
        if tolerations is None:
            tolerations = self._tolerations.remember(
                tolerations_bytes,
                tuple(decode_shaped(tolerations_bytes, TOLERATIONS, "spec.tolerations") or ()),
            )
        affinity = self._affinity.get(affinity_bytes, _MISSING)
        if affinity is _MISSING:
            affinity = self._affinity.remember(
                affinity_bytes, decode_shaped(affinity_bytes, AFFINITY, "spec.affinity") or None
            )
        containers_key: _ContainersKey = key[3:]
        containers = self._containers.get(containers_key)
        if containers is None:
            requests, qos = exact_requests_and_qos(spec, status)
            images = tuple(sorted(str(c.image or "") for c in spec.containers or ()))
            containers = self._containers.remember(containers_key, (requests, qos, images))
        return (node_selector, tolerations, affinity, *containers)

    def _time(self, value: str | None, path: str) -> float | None:
        if not value:
            return None
        found = self._times.get(value, _MISSING)
        if found is _MISSING:
            found = self._times.remember(value, projection.parse_timestamp(value, path))
        return found  # type: ignore[no-any-return]  # the memo holds float | None

    def _new_map(self, data: bytes) -> Mapping[str, str]:
        return self._maps.remember(data, dict(_LABELS.decode(data) or EMPTY_MAP))

    def _status(
        self, status: ItemStatus, created: float
    ) -> tuple[StatusKey, PodStatusInfo | None, bool]:
        """``projection.pod_status`` of the same status, one copy of each distinct result,
        and whether the pod is Ready (read in the same pass over its conditions).

        Every pod has a status, so this runs once per pod at cold start: the memo is keyed
        by a plain tuple of exactly the values the result is made of (hashed in C), and the
        frozen dataclasses are built only on a miss. The key is returned too: it keys the
        ``extra`` memo without hashing the dataclasses. Before all that, the status is
        compared with the previous pod's, as parsed, and with its creation time: equal, the
        result is the previous pod's.
        """
        last = self._last
        parts = (
            created,
            status.reason,
            status.conditions,
            status.container_statuses,
            status.init_container_statuses,
            status.ephemeral_container_statuses,
        )
        if parts == last.status_parts:  # the previous pod's, field for field
            return last.status  # type: ignore[no-any-return]  # set with the parts below
        times = self._times
        conditions = []
        ready = None
        for condition in status.conditions or ():
            if ready is None and condition.type == READY:  # the first one counts
                ready = condition.status == "True"
            moved = times.get(condition.last_transition_time or "", _MISSING)
            if moved is _MISSING:
                moved = self._time(condition.last_transition_time, "status.conditions")
            conditions.append(
                (
                    condition.type,
                    condition.status,
                    condition.reason,
                    None if moved is None else moved - created,
                )
            )
        key = (
            status.reason,
            tuple(conditions),
            status.container_statuses or (),
            status.init_container_statuses or (),
            status.ephemeral_container_statuses or (),
        )
        found = self._statuses.get(key, _MISSING)
        if found is _MISSING:
            found = self._statuses.remember(key, status_info(key))
        last.status_parts, last.status = parts, (key, found, bool(ready))
        return last.status  # type: ignore[no-any-return]  # just set

    def _extra(
        self, spec: ItemSpec, status_key: StatusKey | None, status: PodStatusInfo | None
    ) -> Mapping[str, Any]:
        """``_extra_of``, or the previous pod's extras if made of the same parts."""
        last = self._last
        spread = spec.topology_spread_constraints
        # The status key is the previous pod's own object when its status was equal: the
        # comparison then stops at ``is``, without walking the key.
        parts = (status_key, spread, bool(spec.resource_claims))
        if parts == last.extra_parts:
            return last.extra
        extra = self._extra_of(spec, bytes(spread), status_key, status)
        last.extra_parts, last.extra = parts, extra
        return extra

    def _volume_facts(self, volumes: list[ItemVolume]) -> tuple[bool, tuple[str, ...]]:
        """``volume_facts`` of the volumes, or the previous pod's if they are equal (their
        names are not decoded, so a template's pods match)."""
        last = self._last
        if volumes != last.volumes:
            last.volumes, last.volume_facts = volumes, volume_facts(volumes)
        return last.volume_facts

    def _extra_of(
        self,
        spec: ItemSpec,
        spread: bytes,
        status_key: StatusKey | None,
        status: PodStatusInfo | None,
    ) -> Mapping[str, Any]:
        """``PodInfo.extra``, shared by the pods of one template (``project`` returns the
        empty one itself for the most pods, which have no extras)."""
        claims = bool(spec.resource_claims)
        if not claims and status is None and spread == b"null":
            return EMPTY_MAP
        key = (spread, claims, status_key)
        found = self._extras.get(key)
        if found is not None:
            return found
        extra: dict[str, Any] = {}
        if claims:
            extra["resourceClaims"] = True
        if constraints := decode_shaped(spread, SPREAD, "spec.topologySpreadConstraints"):
            extra[SPREAD_CONSTRAINTS] = tuple(constraints)
        if status is not None:
            extra[STATUS] = status
        return self._extras.remember(key, extra or EMPTY_MAP)


class _Last:
    """The previous pod's repeating parts as parsed, and what was made of them.

    Its raw slices point into the page being read; ``_entries`` drops them at the page's
    end, so the page's bytes do not outlive it.
    """

    __slots__ = (
        "extra",
        "extra_parts",
        "labels",
        "labels_raw",
        "owners",
        "owners_raw",
        "probe",
        "status",
        "status_parts",
        "template",
        "volume_facts",
        "volumes",
    )

    def __init__(self) -> None:
        self.labels_raw: Any = None
        self.labels: Mapping[str, str] = EMPTY_MAP
        self.owners_raw: Any = None
        self.owners: tuple[OwnerRef, ...] = ()
        self.probe: Any = None
        self.template: Any = None
        self.volumes: list[ItemVolume] | None = None
        self.status_parts: Any = None
        self.status: Any = None
        self.extra_parts: Any = None
        self.extra: Mapping[str, Any] = EMPTY_MAP
        self.volume_facts: tuple[bool, tuple[str, ...]] = (False, ())
