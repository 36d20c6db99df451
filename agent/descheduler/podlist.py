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

Watch events stay on the dict path (``wire`` + ``projection``): they arrive one at a time.

Concurrency: one ``PodListProjector`` per pod cache, used only by its watch thread.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, TypeVar

import msgspec

from agent.descheduler import projection
from agent.descheduler.model import EMPTY_MAP, OwnerRef, PodInfo
from agent.descheduler.wire import Condition, OwnerReference, Volume
from agent.kube.pods import API_SOURCE, MIRROR_ANNOTATION, SOURCE_ANNOTATION
from agent.kube.qos import pod_qos

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_NULL = msgspec.Raw(b"null")


class _Item(msgspec.Struct, rename="camel"):
    """Base: camelCase names on the wire; unknown fields are skipped while parsing."""


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
    volumes: list[Volume] | None = None
    resource_claims: Any = None
    topology_spread_constraints: msgspec.Raw = _NULL


class ItemStatus(_Item):
    phase: str | None = None
    start_time: str | None = None
    qos_class: str | None = None
    conditions: list[Condition] | None = None


class PodItem(_Item):
    metadata: ItemMeta | None = None
    spec: ItemSpec | None = None
    status: ItemStatus | None = None


_EMPTY_META = ItemMeta()
_EMPTY_SPEC = ItemSpec()
_EMPTY_STATUS = ItemStatus()

_ContainersKey = tuple[Any, ...]
_ContainersPart = tuple[Mapping[str, int], str, tuple[str, ...]]


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
        self._containers: _Memo[_ContainersKey, _ContainersPart] = _Memo(limit)
        self._maps: _Memo[bytes, Mapping[str, str]] = _Memo(limit)
        self._owners: _Memo[bytes, tuple[OwnerRef, ...]] = _Memo(limit)
        self._tolerations: _Memo[bytes, tuple[Mapping[str, Any], ...]] = _Memo(limit)
        self._affinity: _Memo[bytes, Any] = _Memo(limit)
        self._extras: _Memo[tuple[bytes, bool], Mapping[str, Any]] = _Memo(limit)
        # Times repeat in bursts (a rollout's pods share their second), not across the
        # cluster: a small table, or it would hold a float per pod.
        self._times: _Memo[str, float | None] = _Memo(4096)
        self._strings: _Memo[str, str] = _Memo(limit)

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
        """``projection.project_pod`` of the same pod, with repeating parts memoized."""
        metadata = item.metadata or _EMPTY_META
        spec = item.spec or _EMPTY_SPEC
        status = item.status or _EMPTY_STATUS
        namespace = self._string(metadata.namespace or "")
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
        requests, qos, images = self._containers_part(spec, status)
        return PodInfo(
            namespace=namespace,
            name=name,
            uid=metadata.uid or f"{namespace}/{name}",
            node_name=self._string(spec.node_name or ""),
            phase=self._string(status.phase or ""),
            creation_timestamp=self._time(metadata.creation_timestamp) or 0.0,
            start_time=self._time(status.start_time),
            deleting=bool(metadata.deletion_timestamp),
            labels=self._map(metadata.labels),
            annotations=kept or EMPTY_MAP,
            owners=self._owner_refs(metadata.owner_references),
            priority=spec.priority,
            priority_class_name=self._string(spec.priority_class_name or ""),
            requests=requests,
            qos=qos,
            mirror=mirror,
            static=static,
            node_selector=self._map(spec.node_selector),
            affinity=self._affinity_of(spec.affinity),
            tolerations=self._tolerations_of(spec.tolerations),
            local_storage=_local_storage(spec.volumes),
            pvc_claims=_claims(spec.volumes),
            images=images,
            ready=_ready(status.conditions),
            extra=self._extra_of(spec),
        )

    def _containers_part(self, spec: ItemSpec, status: ItemStatus) -> _ContainersPart:
        """Requests, QoS and sorted images: all that is read of the containers."""
        key = (
            tuple([(bytes(c.resources), c.image) for c in spec.containers or ()]),
            tuple([(bytes(c.resources), c.restart_policy) for c in spec.init_containers or ()]),
            bytes(spec.overhead),
            bytes(spec.resources),
            status.qos_class,
        )
        found = self._containers.get(key)
        if found is not None:
            return found
        requests, qos = _exact_requests_and_qos(spec, status)
        images = tuple(sorted(str(c.image or "") for c in spec.containers or ()))
        return self._containers.remember(key, (requests, qos, images))

    def _string(self, value: str) -> str:
        found = self._strings.get(value)
        return found if found is not None else self._strings.remember(value, value)

    def _time(self, value: str | None) -> float | None:
        if not value:
            return None
        if value in self._times:
            return self._times[value]
        return self._times.remember(value, projection.parse_timestamp(value))

    def _map(self, raw: msgspec.Raw) -> Mapping[str, str]:
        return self._cached(self._maps, raw, lambda data: dict(_LABELS.decode(data) or EMPTY_MAP))

    def _owner_refs(self, raw: msgspec.Raw) -> tuple[OwnerRef, ...]:
        return self._cached(
            self._owners,
            raw,
            lambda data: projection.owner_refs(
                {"ownerReferences": msgspec.to_builtins(_OWNERS.decode(data))}
            ),
        )

    def _tolerations_of(self, raw: msgspec.Raw) -> tuple[Mapping[str, Any], ...]:
        return self._cached(self._tolerations, raw, lambda data: tuple(_decode_any(data) or ()))

    def _affinity_of(self, raw: msgspec.Raw) -> Any:
        return self._cached(self._affinity, raw, lambda data: _decode_any(data) or None)

    def _extra_of(self, spec: ItemSpec) -> Mapping[str, Any]:
        """``PodInfo.extra``: shared by the pods of one template, empty for most pods."""
        spread = bytes(spec.topology_spread_constraints)
        claims = bool(spec.resource_claims)
        if not claims and spread == b"null":
            return EMPTY_MAP
        key = (spread, claims)
        found = self._extras.get(key)
        if found is not None:
            return found
        extra: dict[str, Any] = {}
        if claims:
            extra["resourceClaims"] = True
        if constraints := _decode_any(spread):
            extra[projection.SPREAD_CONSTRAINTS] = tuple(constraints)
        return self._extras.remember(key, extra or EMPTY_MAP)

    @staticmethod
    def _cached(memo: _Memo[bytes, V], raw: msgspec.Raw, make: Callable[[bytes], V]) -> V:
        data = bytes(raw)
        if data in memo:
            return memo[data]
        return memo.remember(data, make(data))


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


def _local_storage(volumes: list[Volume] | None) -> bool:
    return any(v.empty_dir is not None or v.host_path is not None for v in volumes or ())


def _claims(volumes: list[Volume] | None) -> tuple[str, ...]:
    if not volumes:
        return ()
    claims: list[str] = []
    for volume in volumes:
        claim = volume.persistent_volume_claim
        if isinstance(claim, Mapping) and claim.get("claimName"):
            claims.append(str(claim["claimName"]))
    return tuple(claims)


def _ready(conditions: list[Condition] | None) -> bool:
    for condition in conditions or ():
        if condition.type == "Ready":
            return condition.status == "True"
    return False
