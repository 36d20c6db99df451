"""The pods of a list page, projected straight from their bytes, each repeating part once.

Cold start decodes and projects every pod of the cluster (150,000 at 5k nodes) before the
first cycle. Through ``wire``'s dicts and ``projection.project_pod`` that cost about 300 µs a
pod, nearly all of it repeated work: the pods of one ReplicaSet send byte-identical
resources, tolerations, affinity, labels and owner references, and ``Fraction`` arithmetic
for their requests and QoS ran again for every one of them.

Here a pod is decoded into a struct that names only what the projection reads, and every
sub-object that repeats across pods stays a raw slice of the bytes (``msgspec.Raw``). The
slice's bytes key a memo: on a miss the part is decoded and computed by the exact rules in
``projection`` and ``agent.kube.qos`` (the same functions, on the same dicts ``wire`` would
have made), on a hit the earlier result is reused. Equal bytes give equal results, so the
projection is the exact one by construction; a test compares the two paths on every pod of
the parity fixture. Memoized values are shared between pods, which is what ``sharing`` would
do afterwards, so pods from here skip it.

A page is sliced into raw items first and each item is decoded only when its turn comes, so
every byte is scanned twice. Decoding the page in one pass, straight into ``PodItem``
structs, saves about a fifth of a cold start's instructions, but every struct then lives
until its pod is projected (about 2.3 KiB each): at 150,000 pods the peak RSS of the
5k-node benchmark went from about 560 to 900 MiB. Memory is what a descheduler is sized by,
so the page stays raw.

Watch events stay on the dict path (``wire`` + ``projection``): they arrive one at a time.

Concurrency: one ``PodListProjector`` per pod cache, used only by its watch thread.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from sys import intern
from typing import Any, TypeVar

import msgspec

from agent.descheduler import projection
from agent.descheduler.model import EMPTY_MAP, OwnerRef, PodInfo
from agent.descheduler.podstatus import (
    STATUS,
    ContainerStatusInfo,
    PodConditionInfo,
    PodStatusInfo,
    container_status,
)
from agent.descheduler.wire import OwnerReference
from agent.kube.pods import API_SOURCE, MIRROR_ANNOTATION, SOURCE_ANNOTATION
from agent.kube.qos import pod_qos

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_NULL = msgspec.Raw(b"null")
_MISSING: Any = object()
"""A memo miss, told apart from memoized values that are empty or ``None``."""


class _Item(msgspec.Struct, rename="camel", gc=False):
    """Base: camelCase names on the wire; unknown fields are skipped while parsing."""


class _FrozenItem(msgspec.Struct, rename="camel", gc=False, frozen=True):
    """As ``_Item``, hashable: the struct itself can be part of a memo key."""


class ItemMeta(_Item):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: msgspec.Raw = _NULL
    annotations: dict[str, str] | None = None
    owner_references: msgspec.Raw = _NULL


class ItemContainer(_Item):
    image: str | None = None
    resources: msgspec.Raw = _NULL
    restart_policy: str | None = None


class ItemVolume(_Item):
    """Only what tells node-local storage and claims apart (not the name, which is unique)."""

    empty_dir: Any = None
    host_path: Any = None
    persistent_volume_claim: Any = None


class ItemSpec(_Item):
    node_name: str | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    node_selector: msgspec.Raw = _NULL
    affinity: msgspec.Raw = _NULL
    tolerations: msgspec.Raw = _NULL
    containers: list[ItemContainer] | None = None
    init_containers: list[ItemContainer] | None = None
    overhead: msgspec.Raw = _NULL
    resources: msgspec.Raw = _NULL
    volumes: list[ItemVolume] | None = None
    resource_claims: Any = None
    topology_spread_constraints: msgspec.Raw = _NULL


class ItemCondition(_Item):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    last_transition_time: str | None = None


# The container statuses are frozen (hashable in C) and decoded as tuples: the tuple of a
# pod's statuses is itself the status memo's key part, with no Python loop per container.
class ItemWaiting(_FrozenItem, frozen=True):
    reason: str | None = None


class ItemTerminated(_FrozenItem, frozen=True):
    reason: str | None = None
    exit_code: int | None = None


class ItemContainerState(_FrozenItem, frozen=True):
    waiting: ItemWaiting | None = None
    terminated: ItemTerminated | None = None


class ItemContainerStatus(_FrozenItem, frozen=True):
    restart_count: int | None = None
    state: ItemContainerState | None = None


class ItemStatus(_Item):
    phase: str | None = None
    start_time: str | None = None
    qos_class: str | None = None
    reason: str | None = None
    conditions: list[ItemCondition] | None = None
    container_statuses: tuple[ItemContainerStatus, ...] | None = None
    init_container_statuses: tuple[ItemContainerStatus, ...] | None = None
    ephemeral_container_statuses: tuple[ItemContainerStatus, ...] | None = None


class PodItem(_Item):
    metadata: ItemMeta | None = None
    spec: ItemSpec | None = None
    status: ItemStatus | None = None


_EMPTY_META = ItemMeta()
_EMPTY_SPEC = ItemSpec()
_EMPTY_STATUS = ItemStatus()

_ContainersKey = tuple[Any, ...]
_ContainersPart = tuple[Mapping[str, int], str, tuple[str, ...]]
_TemplateKey = tuple[Any, ...]
_TemplatePart = tuple[
    tuple[OwnerRef, ...],
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


def _decode_any(raw: bytes) -> Any:
    return msgspec.json.decode(raw)


_LABELS = msgspec.json.Decoder(dict[str, str] | None)
_OWNERS = msgspec.json.Decoder(list[OwnerReference] | None)


class PodListProjector:
    """``decode_page`` yields ``PodItem`` structs; ``project`` makes their ``PodInfo``."""

    def __init__(self, limit: int = 200_000) -> None:
        page = msgspec.defstruct(
            "PodItemList",
            [("metadata", Any, None), ("items", list[msgspec.Raw] | None, None)],
        )
        self._page: msgspec.json.Decoder[Any] = msgspec.json.Decoder(page)
        self._item = msgspec.json.Decoder(PodItem)
        self._templates: _Memo[_TemplateKey, _TemplatePart] = _Memo(limit)
        self._containers: _Memo[_ContainersKey, _ContainersPart] = _Memo(limit)
        self._maps: _Memo[bytes, Mapping[str, str]] = _Memo(limit)
        self._owners: _Memo[bytes, tuple[OwnerRef, ...]] = _Memo(limit)
        self._tolerations: _Memo[bytes, tuple[Mapping[str, Any], ...]] = _Memo(limit)
        self._affinity: _Memo[bytes, Any] = _Memo(limit)
        # Statuses are equal across pods that started in the same rhythm (condition times
        # are kept relative to creation): one copy of each, and of each ``extra`` holding it.
        self._statuses: _Memo[_StatusKey, PodStatusInfo | None] = _Memo(limit)
        self._extras: _Memo[tuple[bytes, bool, _StatusKey], Mapping[str, Any]] = _Memo(limit)
        # Times repeat in bursts (a rollout's pods share their second), not across the
        # cluster: a small table, or it would hold a float per pod.
        self._times: _Memo[str, float | None] = _Memo(4096)

    # -- decoding ------------------------------------------------------------------

    def decode_page(self, data: bytes) -> dict[str, Any]:
        """The page, its ``items`` a one-pass iterator of ``PodItem`` made one at a time."""
        page: Any = self._page.decode(data)
        raws = page.items or []
        page.items = None
        metadata = page.metadata if isinstance(page.metadata, dict) else {}
        return {"metadata": metadata, "items": self._one_by_one(raws)}

    def decode_item(self, data: bytes) -> PodItem:
        """One pod's bytes (an item of a List read from a file), as a page item would be."""
        return self._item.decode(data)

    def _one_by_one(self, raws: list[Any]) -> Iterator[PodItem]:
        decode = self._item.decode
        for index, raw in enumerate(raws):
            raws[index] = None  # the slice goes as soon as its item is decoded
            yield decode(raw)

    # -- projecting ----------------------------------------------------------------

    @staticmethod
    def key(item: PodItem) -> str:
        """``namespace/name``, as ``object_key`` gives for the dict."""
        metadata = item.metadata or _EMPTY_META
        name = str(metadata.name or "")
        return f"{metadata.namespace}/{name}" if metadata.namespace else name

    def project(self, item: PodItem) -> PodInfo:
        """``projection.project_pod`` of the same pod, with repeating parts memoized.

        The memo lookups are written out here rather than called through small methods:
        this runs once per pod of the cluster at cold start, where a Python call per
        field cost more than the lookups themselves.
        """
        metadata = item.metadata or _EMPTY_META
        spec = item.spec or _EMPTY_SPEC
        status = item.status or _EMPTY_STATUS
        namespace = intern(metadata.namespace or "")
        name = metadata.name or ""
        annotations = metadata.annotations
        if annotations:
            kept = {
                key: annotations[key] for key in projection.KEPT_ANNOTATIONS if key in annotations
            }
            mirror = MIRROR_ANNOTATION in annotations
            static = annotations.get(SOURCE_ANNOTATION, API_SOURCE) != API_SOURCE
        else:
            kept, mirror, static = {}, False, False
        labels_bytes = bytes(metadata.labels)
        labels = self._maps.get(labels_bytes, _MISSING)
        if labels is _MISSING:
            labels = self._new_map(labels_bytes)
        containers = spec.containers
        init_containers = spec.init_containers
        # One lookup for every part a pod template repeats (labels stay apart: a
        # StatefulSet's pods each have their own).
        template_key: _TemplateKey = (
            bytes(metadata.owner_references),
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
        owners, node_selector, tolerations, affinity, requests, qos, images = template
        times = self._times
        stamp = metadata.creation_timestamp or ""
        created = times.get(stamp, _MISSING)
        if created is _MISSING:
            created = self._time(stamp)
        created = created or 0.0
        status_key, pod_status, ready = self._status(status, created)
        spread = bytes(spec.topology_spread_constraints)
        if pod_status is None and spread == b"null" and not spec.resource_claims:
            extra = EMPTY_MAP  # most pods: nothing beyond the common fields
        else:
            extra = self._extra_of(spec, spread, status_key, pod_status)
        if not spec.node_name:
            extra = _pending_extra(extra, status)
        local_storage, claims = _volume_facts(spec.volumes) if spec.volumes else (False, ())
        # Positional, in ``PodInfo``'s field order: a Struct matches keywords against its
        # 25 field names one by one, which cost ~2 us a pod, five times the positional call.
        # A swapped field fails the test that compares this path with ``projection``.
        return PodInfo(
            namespace,
            name,
            metadata.uid or f"{namespace}/{name}",  # uid
            intern(spec.node_name or ""),  # node_name
            intern(status.phase or ""),  # phase
            created,  # creation_timestamp
            self._time(status.start_time) if status.start_time else None,  # start_time
            bool(metadata.deletion_timestamp),  # deleting
            labels,
            kept or EMPTY_MAP,  # annotations
            owners,
            spec.priority,
            intern(spec.priority_class_name or ""),  # priority_class_name
            requests,
            qos,
            mirror,
            static,
            node_selector,
            affinity,
            tolerations,
            local_storage,
            claims,  # pvc_claims
            images,
            ready,
            extra,
        )

    def _template(self, key: _TemplateKey, spec: ItemSpec, status: ItemStatus) -> _TemplatePart:
        """The parts of a template not seen whole before, each through its own memo, so
        templates that differ in one part still share the others."""
        owners_bytes, selector_bytes, tolerations_bytes, affinity_bytes = key[:4]
        node_selector = self._maps.get(selector_bytes, _MISSING)
        if node_selector is _MISSING:
            node_selector = self._new_map(selector_bytes)
        owners = self._owners.get(owners_bytes)
        if owners is None:
            owners = self._owners.remember(owners_bytes, _owner_refs_of(owners_bytes))
        tolerations = self._tolerations.get(tolerations_bytes)
        if tolerations is None:
            tolerations = self._tolerations.remember(
                tolerations_bytes, tuple(_decode_any(tolerations_bytes) or ())
            )
        affinity = self._affinity.get(affinity_bytes, _MISSING)
        if affinity is _MISSING:
            affinity = self._affinity.remember(affinity_bytes, _decode_any(affinity_bytes) or None)
        containers_key: _ContainersKey = key[4:]
        containers = self._containers.get(containers_key)
        if containers is None:
            requests, qos = _exact_requests_and_qos(spec, status)
            images = tuple(sorted(str(c.image or "") for c in spec.containers or ()))
            containers = self._containers.remember(containers_key, (requests, qos, images))
        return (owners, node_selector, tolerations, affinity, *containers)

    def _time(self, value: str | None) -> float | None:
        if not value:
            return None
        found = self._times.get(value, _MISSING)
        if found is _MISSING:
            found = self._times.remember(value, projection.parse_timestamp(value))
        return found  # type: ignore[no-any-return]  # the memo holds float | None

    def _new_map(self, data: bytes) -> Mapping[str, str]:
        return self._maps.remember(data, dict(_LABELS.decode(data) or EMPTY_MAP))

    def _status(
        self, status: ItemStatus, created: float
    ) -> tuple[_StatusKey, PodStatusInfo | None, bool]:
        """``projection.pod_status`` of the same status, one copy of each distinct result,
        and whether the pod is Ready (read in the same pass over its conditions).

        Every pod has a status, so this runs once per pod at cold start: the memo is keyed
        by a plain tuple of exactly the values the result is made of (hashed in C), and the
        frozen dataclasses are built only on a miss. The key is returned too: it keys the
        ``extra`` memo without hashing the dataclasses.
        """
        times = self._times
        conditions = []
        ready = None
        for condition in status.conditions or ():
            if ready is None and condition.type == "Ready":  # the first one counts
                ready = condition.status == "True"
            moved = times.get(condition.last_transition_time or "", _MISSING)
            if moved is _MISSING:
                moved = self._time(condition.last_transition_time)
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
            found = self._statuses.remember(key, _status_info(key))
        return key, found, bool(ready)

    def _extra_of(
        self,
        spec: ItemSpec,
        spread: bytes,
        status_key: _StatusKey,
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
        if constraints := _decode_any(spread):
            extra[projection.SPREAD_CONSTRAINTS] = tuple(constraints)
        if status is not None:
            extra[STATUS] = status
        return self._extras.remember(key, extra or EMPTY_MAP)


def _owner_refs_of(data: bytes) -> tuple[OwnerRef, ...]:
    return projection.owner_refs({"ownerReferences": msgspec.to_builtins(_OWNERS.decode(data))})


def _exact_requests_and_qos(spec: ItemSpec, status: ItemStatus) -> tuple[Mapping[str, int], str]:
    """The exact rules, on the dicts ``wire`` makes of the same bytes."""
    spec_dict: dict[str, Any] = {}
    if spec.containers is not None:
        spec_dict["containers"] = [_container_dict(c) for c in spec.containers]
    if spec.init_containers is not None:
        spec_dict["initContainers"] = [_container_dict(c) for c in spec.init_containers]
    for field, raw in (("overhead", spec.overhead), ("resources", spec.resources)):
        value = _decode_any(bytes(raw))
        if value is not None:
            spec_dict[field] = value
    pod = {"spec": spec_dict, "status": {"qosClass": status.qos_class}}
    return projection.pod_requests(spec_dict), pod_qos(pod).value


def _container_dict(container: ItemContainer) -> dict[str, Any]:
    built: dict[str, Any] = {}
    resources = _decode_any(bytes(container.resources))
    if resources is not None:
        built["resources"] = resources
    if container.restart_policy is not None:
        built["restartPolicy"] = container.restart_policy
    return built


def _volume_facts(volumes: list[ItemVolume]) -> tuple[bool, tuple[str, ...]]:
    """Whether any volume is node-local storage, and the claim names, in one pass."""
    local = False
    claims: list[str] = []
    for volume in volumes:
        if volume.empty_dir is not None or volume.host_path is not None:
            local = True
        claim = volume.persistent_volume_claim
        # A dict, as the decoder makes every object of an ``Any`` field (``isinstance``
        # against ``Mapping`` runs the ABC's Python-level check, for every volume).
        if claim is not None and type(claim) is dict and claim.get("claimName"):
            claims.append(str(claim["claimName"]))
    return local, tuple(claims) if claims else ()


def _pending_extra(extra: Mapping[str, Any], status: ItemStatus) -> Mapping[str, Any]:
    """``projection.project_pod``'s extras for a pod bound to no node (rare): the shared
    extras of its template, plus when it became Unschedulable, if it did."""
    if not status.conditions:
        return extra
    conditions = {"conditions": msgspec.to_builtins(status.conditions)}
    since = projection.unschedulable_since("", conditions)
    if since is None:
        return extra
    return {**extra, projection.UNSCHEDULABLE_SINCE: since}


_ContainerState = tuple[int, str | None, str | None, int | None]
_StatusKey = tuple[
    str | None,
    tuple[tuple[str | None, str | None, str | None, float | None], ...],
    tuple[ItemContainerStatus, ...],
    tuple[ItemContainerStatus, ...],
    tuple[ItemContainerStatus, ...],
]


def _container_states(
    statuses: tuple[ItemContainerStatus, ...],
) -> tuple[_ContainerState, ...]:
    """Per container: restarts, the waiting and terminated reasons (``None`` when that
    state is absent) and the exit code; all ``container_status`` reads."""
    states = []
    for each in statuses:
        state = each.state
        waiting = state.waiting if state is not None else None
        terminated = state.terminated if state is not None else None
        states.append(
            (
                each.restart_count or 0,
                None if waiting is None else waiting.reason or "",
                None if terminated is None else terminated.reason or "",
                None if terminated is None else terminated.exit_code,
            )
        )
    return tuple(states)


def _status_info(key: _StatusKey) -> PodStatusInfo | None:
    reason, conditions, containers, init_containers, ephemeral_containers = key
    info = PodStatusInfo(
        reason=reason or "",
        containers=_kept(containers),
        init_containers=_kept(init_containers),
        ephemeral_containers=_kept(ephemeral_containers),
        conditions=tuple(
            PodConditionInfo(
                type=intern(kind or ""),
                status=intern(value or ""),
                reason=intern(why or ""),
                since_creation=since,
            )
            for kind, value, why, since in conditions
        ),
    )
    return None if info.empty else info


def _kept(statuses: tuple[ItemContainerStatus, ...]) -> tuple[ContainerStatusInfo, ...]:
    kept = [container_status(*state) for state in _container_states(statuses)]
    return tuple(info for info in kept if info is not None)
