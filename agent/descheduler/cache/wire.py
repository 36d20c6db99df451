"""Decoding list pages and watch events straight from bytes, keeping only what we read.

``json.loads`` builds every field of every object (``managedFields``, container env and
probes, node images) before the projection throws most of it away; for a 150,000-pod list
that garbage is most of the cold start and of the peak memory. msgspec decodes into typed
structs that name only the fields some projection reads and skips everything else while
parsing. The structs are then turned back into (much smaller) JSON-shaped dicts, so the one
projection in ``projection`` serves both paths: a parity test checks that the two paths
give identical projections on the same bytes. Measured in ``scripts/benchmarks/descheduler.py``
(figures in BENCHMARKS.md and docs/dependencies.md).

A field a projection starts reading must be added here too; the parity test fails until it
is. Pod list pages, the bulk of a cold start, take ``podlist``'s path instead: structs
projected directly, the parts that repeat across pods memoized (its own parity test).
Sub-objects that are small or rare (affinity, tolerations, taints, PDB specs) are kept whole
as ``Any``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

JsonObject = dict[str, Any]


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Base: camelCase names on the wire; absent fields stay absent in the dict."""


class OwnerReference(_Wire):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None


class ObjectMeta(_Wire):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None


class Condition(_Wire):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    last_transition_time: str | None = None


class PodCondition(Condition):
    reason: str | None = None
    last_transition_time: str | None = None


class Container(_Wire):
    name: str | None = None
    image: str | None = None
    resources: Any = None
    restart_policy: str | None = None
    ports: Any = None


class Volume(_Wire):
    name: str | None = None
    empty_dir: Any = None
    host_path: Any = None
    persistent_volume_claim: Any = None
    ephemeral: Any = None


class PodSpec(_Wire):
    node_name: str | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Any = None
    tolerations: Any = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    overhead: Any = None
    resources: Any = None
    volumes: list[Volume] | None = None
    topology_spread_constraints: Any = None
    resource_claims: Any = None
    scheduler_name: str | None = None


class ContainerStatus(_Wire):
    name: str | None = None
    ready: bool | None = None
    restart_count: int | None = None
    state: Any = None
    last_state: Any = None


class PodStatus(_Wire):
    phase: str | None = None
    reason: str | None = None
    start_time: str | None = None
    qos_class: str | None = None
    conditions: list[PodCondition] | None = None
    container_statuses: list[ContainerStatus] | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    ephemeral_container_statuses: list[ContainerStatus] | None = None


class Pod(_Wire):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


class NodeSpec(_Wire):
    unschedulable: bool | None = None
    taints: Any = None


class NodeSystemInfo(_Wire):
    boot_id: str | None = msgspec.field(default=None, name="bootID")


class NodeStatus(_Wire):
    allocatable: dict[str, Any] | None = None
    capacity: dict[str, Any] | None = None
    conditions: list[Condition] | None = None
    node_info: NodeSystemInfo | None = None


class Node(_Wire):
    metadata: ObjectMeta | None = None
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


class ContainerImage(_Wire):
    names: list[str] | None = None
    size_bytes: int | None = None


class NodeStatusWithImages(NodeStatus):
    images: list[ContainerImage] | None = None


class NodeWithImages(Node):
    """A Node with ``status.images``: only the offline plan reads them (ImageLocality in
    placement); the live caches leave them unparsed."""

    status: NodeStatusWithImages | None = None


class Namespace(_Wire):
    metadata: ObjectMeta | None = None


class PodDisruptionBudget(_Wire):
    metadata: ObjectMeta | None = None
    spec: Any = None
    status: Any = None


class PersistentVolumeClaim(_Wire):
    metadata: ObjectMeta | None = None
    spec: Any = None


class PriorityClass(_Wire):
    metadata: ObjectMeta | None = None
    value: int | None = None
    global_default: bool | None = None


class WorkloadMeta(_Wire):
    """A workload's metadata: no labels or annotations (a ReplicaSet carries its pods')."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    creation_timestamp: str | None = None
    owner_references: list[OwnerReference] | None = None


class RollingUpdate(_Wire):
    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


class Strategy(_Wire):
    type: str | None = None
    rolling_update: RollingUpdate | None = None


class DeploymentSpec(_Wire):
    replicas: int | None = None
    strategy: Strategy | None = None


class Deployment(_Wire):
    metadata: WorkloadMeta | None = None
    spec: DeploymentSpec | None = None


class ReplicaSetSpec(_Wire):
    replicas: int | None = None


class ReplicaSet(_Wire):
    metadata: WorkloadMeta | None = None
    spec: ReplicaSetSpec | None = None


class ReplicationController(_Wire):
    metadata: WorkloadMeta | None = None
    spec: ReplicaSetSpec | None = None


class StatefulSetSpec(_Wire):
    replicas: int | None = None
    update_strategy: Strategy | None = None


class StatefulSet(_Wire):
    metadata: WorkloadMeta | None = None
    spec: StatefulSetSpec | None = None


class ListMeta(_Wire):
    resource_version: str | None = None
    continue_: str | None = msgspec.field(default=None, name="continue")


class _Event(msgspec.Struct):
    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"{}")


class WireCodec:
    """``decode_page``/``decode_event`` for one kind (``Pod``, ``Node``, ...)."""

    def __init__(self, kind: type[msgspec.Struct]) -> None:
        # Items stay raw slices of the page's bytes until the cache takes them one by one.
        page = msgspec.defstruct(
            f"{kind.__name__}List",
            [("metadata", ListMeta | None, None), ("items", list[msgspec.Raw] | None, None)],
            omit_defaults=True,
        )
        self._page: msgspec.json.Decoder[Any] = msgspec.json.Decoder(page)
        self._item: msgspec.json.Decoder[Any] = msgspec.json.Decoder(kind)
        self._event = msgspec.json.Decoder(_Event)

    def decode_page(self, data: bytes) -> JsonObject:
        """The page, its ``items`` a one-pass iterator of dicts made one at a time.

        The page is parsed once with every item left as a raw slice of the bytes; each item
        is decoded into its struct, then its dict, only when the cache gets to it, and both
        go right after. So a 150,000-pod page never exists as 150,000 structs or dicts at
        once: the peak is the bytes plus the projections.
        """
        page: Any = self._page.decode(data)
        raws = page.items or []
        page.items = None
        return {
            "metadata": msgspec.to_builtins(page.metadata) if page.metadata else {},
            "items": _one_by_one(raws, self._item),
        }

    def decode_item(self, data: bytes) -> JsonObject:
        """One object's bytes (an item of a List read from a file), as a page item would be."""
        return msgspec.to_builtins(self._item.decode(data))  # type: ignore[no-any-return]  # a struct's builtins: a dict

    def decode_event(self, data: bytes) -> JsonObject:
        event = self._event.decode(data)
        if event.type == "ERROR":
            # A Status, not an object of this kind: read it as plain JSON.
            return {"type": event.type, "object": json.loads(bytes(event.object))}
        obj = self._item.decode(event.object)
        return {"type": event.type, "object": msgspec.to_builtins(obj)}


def _one_by_one(raws: list[Any], item: msgspec.json.Decoder[Any]) -> Iterator[JsonObject]:
    for index, raw in enumerate(raws):
        raws[index] = None  # the slice goes as soon as its item is decoded
        yield msgspec.to_builtins(item.decode(raw))


def codec_for(kind: str) -> WireCodec:
    return WireCodec(_KINDS[kind])


_KINDS: dict[str, type[msgspec.Struct]] = {
    "Pod": Pod,
    "Node": Node,
    "NodeWithImages": NodeWithImages,
    "Namespace": Namespace,
    "PodDisruptionBudget": PodDisruptionBudget,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "PriorityClass": PriorityClass,
    "Deployment": Deployment,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
    "ReplicationController": ReplicationController,
}

Decode = Callable[[bytes], Any]
