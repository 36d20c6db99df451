"""Compact projections of the cluster objects the descheduler reads, and the snapshot of them.

Upstream keeps whole objects in shared informers (only ``managedFields`` trimmed); at 5,000
nodes and 150,000 pods that is most of its 1.9 GiB. We keep, per object, only the fields a
plugin reads, already parsed: quantities as integers (CPU in millicores, memory and other
resources in their base unit, ``pods`` as a count), timestamps as Unix seconds, owner
references as tuples. Everything here is immutable, so a snapshot can be handed to a cycle
while the caches move on, and equal sub-values (label maps, toleration lists) can be shared
between objects by the cache.

Pure data: no I/O, no clocks. Projection from API JSON lives in ``projection``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from agent.descheduler.model.metricsusage import KubernetesMetrics, PrometheusSamples
from agent.descheduler.model.taintrecord import TaintRecord
from agent.descheduler.model.values import EMPTY_MAP, ResourceList
from agent.kubesemantics.wellknown import (
    DEPLOYMENT_KIND,
    REPLICA_SET_KIND,
    REPLICATION_CONTROLLER_KIND,
    STATEFUL_SET_KIND,
)

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

CLOCK_SKEW_SECONDS = 60.0
"""How far two clocks of the cluster may disagree and a comparison between them still hold
(an agent's ``observedTime`` against the descheduler's clock; the descheduler's record of a
report's change against a Node condition's ``lastTransitionTime``)."""


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool


class PodInfo(msgspec.Struct, frozen=True, gc=False):
    """One pod, as the plugins and the evictor see it.

    A frozen ``msgspec.Struct`` rather than a frozen dataclass: a cold start builds one per
    pod of the cluster (150,000 at 5k nodes), and a frozen dataclass's ``__init__`` sets each
    of its fields through ``object.__setattr__``, which made building one cost more than
    decoding the pod. The Struct is built in C, is as immutable, and compares and hashes by
    value the same way. ``gc=False``: a PodInfo refers only to strings, numbers, tuples and
    mappings that never refer back, so it can be in no reference cycle, and the collector
    need not walk 150,000 of them on every full collection.
    """

    # The fields a cycle reads of every pod come first, so a pass over 150,000 pods touches
    # fewer cache lines of each (at 5,000 nodes the caches no longer fit the CPU's cache,
    # and each line is a trip to memory); the fields read once per pod, or rarely, follow.
    namespace: str
    name: str
    uid: str
    node_name: str
    phase: str
    """``status.phase``; ``""`` when the API server sent none."""
    owners: tuple[OwnerRef, ...]
    requests: ResourceList
    """Effective pod requests: max(sum of containers, each init container) + overhead."""
    images: tuple[str, ...]
    """Container images, sorted (``RemoveDuplicates`` keys on owner + images)."""
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    """Only the annotations some rule reads (see ``keys.KEPT_ANNOTATIONS``)."""
    priority: int | None
    """``spec.priority``; ``None`` when absent (upstream sorts nil priority first)."""
    qos: str
    """``Guaranteed``, ``Burstable`` or ``BestEffort``."""
    ready: bool
    """The ``Ready`` condition is True (PDBs count Running and Ready pods as healthy)."""
    deleting: bool
    """``metadata.deletionTimestamp`` is set."""
    creation_timestamp: float
    start_time: float | None
    priority_class_name: str
    mirror: bool
    static: bool
    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any] | None
    """``spec.affinity`` as sent (rare enough to keep raw)."""
    tolerations: tuple[Mapping[str, Any], ...]
    local_storage: bool
    """An ``emptyDir`` or ``hostPath`` volume."""
    pvc_claims: tuple[str, ...]
    """Claim names of ``persistentVolumeClaim`` volumes (same namespace)."""
    extra: Mapping[str, Any] = EMPTY_MAP
    """Room for fields later plugins need (container statuses, spread constraints), so the
    common case carries none."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> OwnerRef | None:
        return next((owner for owner in self.owners if owner.controller), None)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    uid: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    allocatable: ResourceList
    unschedulable: bool
    ready: bool
    """The ``Ready`` condition is True."""
    ready_transition: float | None = None
    """``lastTransitionTime`` of the ``Ready`` condition (Unix seconds): for a NotReady node,
    since when it has been NotReady."""
    boot_id: str = ""
    """``status.nodeInfo.bootID``: kubelet reports a new one after every boot."""
    annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAP)
    """Only our own annotations (``projection.KEPT_NODE_ANNOTATIONS``): where our taint
    patches landed. Any node may write its own, so they prove nothing alone: which taints
    are ours is ``ClusterSnapshot.taint_record``'s to say."""
    images: Mapping[str, int] = field(default_factory=lambda: EMPTY_MAP)
    """Image name -> size in bytes, as ``status.images`` lists them: read only for the
    offline plan's placement (ImageLocality); the live caches leave it empty."""


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: Mapping[str, Any] | None
    """``spec.selector`` as sent; ``None`` or ``{}`` selects nothing / everything as the API
    server defines it for policy/v1 (empty selects every pod in the namespace)."""
    min_available: int | str | None
    max_unavailable: int | str | None
    disruptions_allowed: int
    """``status.disruptionsAllowed`` as the disruption controller last wrote it."""
    unhealthy_pod_eviction_policy: str
    """``IfHealthyBudget`` (default) or ``AlwaysAllow``."""
    current_healthy: int | None = None
    desired_healthy: int | None = None
    """``status.currentHealthy``/``desiredHealthy``: the API server lets an unready pod go under
    ``IfHealthyBudget`` only while current >= desired; ``None`` when the status lacks them."""


WORKLOAD_KINDS = (DEPLOYMENT_KIND, REPLICA_SET_KIND, STATEFUL_SET_KIND, REPLICATION_CONTROLLER_KIND)
"""The workloads the caches and a snapshot file keep (``WorkloadInfo``)."""


class WorkloadInfo(msgspec.Struct, frozen=True, gc=False):
    """A controller of pods, as far as its rollout settings go: a Deployment, a ReplicaSet, a
    StatefulSet or a ReplicationController. A workload without a PodDisruptionBudget loses no
    more pods at once than its rollout would take down (``core.rules.rollouts``); these are
    the figures for that.

    A ``msgspec.Struct`` like ``PodInfo``: a large cluster keeps ten ReplicaSets of history
    per Deployment, so these are many and small.
    """

    kind: str
    """One of ``WORKLOAD_KINDS``."""
    namespace: str
    name: str
    uid: str
    replicas: int
    """``spec.replicas``; 1 when absent (the API server's default)."""
    strategy: str = ""
    """``spec.strategy.type`` of a Deployment (``RollingUpdate``, ``Recreate``),
    ``spec.updateStrategy.type`` of a StatefulSet (``RollingUpdate``, ``OnDelete``); ``""``
    when absent (the default, ``RollingUpdate``) and for a ReplicaSet."""
    max_unavailable: int | str | None = None
    """The rolling update's ``maxUnavailable`` as set (a count or ``"25%"``); ``None`` when
    absent (the kind's default)."""
    max_surge: int | str | None = None
    """A Deployment's ``maxSurge`` as set; ``None`` when absent (25 %)."""
    controller: OwnerRef | None = None
    """The workload's own controller (a ReplicaSet's Deployment); ``None`` for none."""


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    namespace: str
    name: str
    storage_class: str


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """Real usage of one node, from its agent's NodeReport (EWMA-smoothed)."""

    node: str
    usage: ResourceList
    """``cpu`` millicores and ``memory`` working-set bytes."""
    pod_usage: Mapping[str, ResourceList]
    """By pod uid."""
    stale: bool
    shutting_down: bool
    gated: bool
    agent_stopped: bool
    shutdown_completed: bool = False
    """The report's last word on the node's shutdown was ``completed``."""
    boot_id: str = ""
    """The boot the report was written in (``status.bootID``)."""
    changed_at: float = 0.0
    """When the descheduler last saw the report change (wall-clock seconds on its own
    clock; offline, bounded by the snapshot's capture time): never later than the writer's
    ``observedTime``."""
    stale_after: float = 180.0
    """How long after ``changed_at`` the report counts (three of its heartbeats)."""
    change_witnessed: bool = False
    """The descheduler saw the report change to what it says (a watch event), rather than
    finding it so when it started: only then is ``changed_at`` the change's own time."""

    @property
    def usable_as_destination(self) -> bool:
        """A node whose fresh report says going down, gated or stopped is never counted as
        room; a stale report vetoes nothing."""
        return self.stale or not (self.shutting_down or self.gated or self.agent_stopped)


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything one cycle reads; built from the caches, or from a file."""

    nodes: Mapping[str, NodeInfo]
    pods_by_node: Mapping[str, Sequence[PodInfo]]
    """Pods bound to each node (finished ones included; plugins decide); pods bound to no
    node yet are under ``""`` (see ``pending_pods``)."""
    namespaces: Mapping[str, Mapping[str, str]]
    """Namespace name -> its labels."""
    disruption_budgets: Mapping[str, Sequence[DisruptionBudget]]
    """By namespace."""
    claims: Mapping[str, ClaimInfo]
    """By ``namespace/name``."""
    priority_classes: Mapping[str, int]
    node_usage: Mapping[str, NodeUsage] = field(default_factory=dict)
    """NodeReports by node name; empty when no agent reports (or the source is off)."""
    prometheus: Mapping[str, PrometheusSamples] = field(default_factory=dict)
    """Each Prometheus query a plugin reads (``metricsUtilization.prometheus``) -> its answer,
    read before the cycle; empty when no plugin reads one."""
    kubernetes_metrics: KubernetesMetrics | None = None
    """metrics.k8s.io's node and pod usage; ``None`` when no plugin reads it."""
    now: float = 0.0
    """Wall-clock Unix seconds the snapshot was taken (pod ages are measured against it)."""
    taint_record: TaintRecord = field(default_factory=TaintRecord)
    """The descheduler's own record of its taints in flight (``model.taintrecord``), read from
    its Lease by the live loop; empty offline, where a snapshot file carries none."""
    workloads: Mapping[str, WorkloadInfo] = field(default_factory=dict)
    """Deployments, ReplicaSets, StatefulSets and ReplicationControllers by UID."""
    workload_kinds: frozenset[str] = frozenset()
    """The kinds of ``workloads`` the source holds in full (the live caches: all of them; a
    snapshot file: those it has any of). A controller of such a kind that is not there does
    not exist; one of another kind may simply not have been dumped (implicit budgets then
    count the pods seen of it)."""

    def pods_on(self, node: str) -> Sequence[PodInfo]:
        return self.pods_by_node.get(node, ())

    @property
    def pending_pods(self) -> Sequence[PodInfo]:
        """Pods not bound to any node (``spec.nodeName`` empty), kept under ``""``."""
        return self.pods_by_node.get("", ())
