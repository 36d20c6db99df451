"""The simulation's nodes: requests as pods move, the scheduler's filters that read one node,
and the per-pod-size rankings the common case is answered from (``simulation``).

Plain ints in the inner loop: a plan places thousands of pods over thousands of nodes.
"""

from __future__ import annotations

import json
from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.descheduler.core.placement.profile import (
    BALANCED,
    FIT,
    MOST_ALLOCATED,
    SchedulerProfile,
)
from agent.descheduler.core.placement.scoring import (
    balanced_allocation,
    least_allocated,
    most_allocated,
    nonzero_size,
)
from agent.descheduler.model.cluster import CPU, MEMORY, PODS, ClusterSnapshot, NodeInfo, PodInfo
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.tolerations import tolerates, untolerated
from agent.kubesemantics.wellknown import NO_SCHEDULE, UNSCHEDULABLE_TAINT, ZONE_LABEL

CORDONED_TAINT = {"key": UNSCHEDULABLE_TAINT, "effect": NO_SCHEDULE}
"""What a cordoned node means to the scheduler's NodeUnschedulable filter."""


@dataclass
class SimNode:
    """One node's state as the simulation moves pods: plain ints, for the inner loop."""

    info: NodeInfo
    index: int
    alloc_cpu: int
    alloc_memory: int
    alloc_pods: int
    zone: str | None
    """``topology.kubernetes.io/zone``, ``None`` without the label."""
    cpu: int = 0
    memory: int = 0
    pods: int = 0
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    other: dict[str, int] = field(default_factory=dict)
    """Requests of every other resource (ephemeral-storage, extended ones)."""

    def add(self, pod: PodInfo, sign: int) -> None:
        requests = pod.requests
        cpu, memory = requests.get(CPU, 0), requests.get(MEMORY, 0)
        nonzero_cpu, nonzero_memory = nonzero_size(pod)
        self.cpu += sign * cpu
        self.memory += sign * memory
        self.pods += sign
        self.nonzero_cpu += sign * nonzero_cpu
        self.nonzero_memory += sign * nonzero_memory
        for name, amount in requests.items():
            if name not in (CPU, MEMORY, PODS):
                self.other[name] = self.other.get(name, 0) + sign * amount

    def load(self) -> dict[str, int]:
        return {CPU: self.cpu, MEMORY: self.memory, PODS: self.pods}

    def resource_score(self, size: PodSize, profile: SchedulerProfile) -> int:
        """NodeResourcesFit (the profile's strategy) plus BalancedAllocation, weighted, with
        a pod of ``size`` added."""
        allocatable = (self.alloc_cpu, self.alloc_memory)
        fit = most_allocated if profile.fit_strategy == MOST_ALLOCATED else least_allocated
        total = 0
        if fit_weight := profile.weight(FIT):
            requested = (
                self.nonzero_cpu + size.nonzero_cpu,
                self.nonzero_memory + size.nonzero_memory,
            )
            total += fit_weight * fit(requested, allocatable, profile.fit_weights)
        if balanced_weight := profile.weight(BALANCED):
            used = (self.cpu + size.cpu, self.memory + size.memory)
            read = profile.balanced_resources
            total += balanced_weight * balanced_allocation(
                [amount for amount, kept in zip(used, read, strict=True) if kept],
                [amount for amount, kept in zip(allocatable, read, strict=True) if kept],
            )
        return total

    def fits(self, size: PodSize) -> bool:
        """NodeResourcesFit's filter for a pod asking only cpu and memory."""
        return (
            self.pods + 1 <= self.alloc_pods
            and (size.cpu <= 0 or size.cpu <= self.alloc_cpu - self.cpu)
            and (size.memory <= 0 or size.memory <= self.alloc_memory - self.memory)
        )


@dataclass(frozen=True, slots=True)
class PodSize:
    """What the resource scores and the fit read of a pod."""

    cpu: int
    memory: int
    nonzero_cpu: int
    nonzero_memory: int

    @classmethod
    def of(cls, pod: PodInfo) -> PodSize:
        nonzero_cpu, nonzero_memory = nonzero_size(pod)
        return cls(
            pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0), nonzero_cpu, nonzero_memory
        )


def new_node(info: NodeInfo, index: int) -> SimNode:
    allocatable = info.allocatable
    return SimNode(
        info=info,
        index=index,
        alloc_cpu=allocatable.get(CPU, 0),
        alloc_memory=allocatable.get(MEMORY, 0),
        alloc_pods=allocatable.get(PODS, 0),
        zone=info.labels.get(ZONE_LABEL),
    )


def resource_misfit(node: SimNode, pod: PodInfo) -> str | None:
    """NodeResourcesFit's filter: the first resource that does not fit, or ``None``."""
    if node.pods + 1 > node.alloc_pods:
        return "too many pods"
    for name, amount in pod.requests.items():
        if amount <= 0 or name == PODS:
            continue  # a resource the pod does not ask for never keeps it away
        if name == CPU:
            free = node.alloc_cpu - node.cpu
        elif name == MEMORY:
            free = node.alloc_memory - node.memory
        else:
            free = node.info.allocatable.get(name, 0) - node.other.get(name, 0)
        if amount > free:
            return f"insufficient {name}"
    return None


def static_misfit(pod: PodInfo, node: NodeInfo, snapshot: ClusterSnapshot) -> str | None:  # noqa: PLR0911 - one exit per filter
    """The filters that do not move while the plan places pods, in the scheduler's order."""
    if not node.ready:
        return "node is not Ready"
    usage = snapshot.node_usage.get(node.name)
    if usage is not None and not usage.usable_as_destination:
        return "agent reports it shutting down, gated or stopped"
    if node.unschedulable and not any(tolerates(t, CORDONED_TAINT) for t in pod.tolerations):
        return "node is unschedulable"
    if node_selector_mismatch(pod.node_selector, node.labels):
        return "nodeSelector does not match"
    if required_affinity_mismatch({"affinity": pod.affinity or {}}, node.labels, node.name):
        return "required node affinity does not match"
    if untolerated(node.taints, list(pod.tolerations)):
        return "untolerated taint"
    return None


def static_key(pod: PodInfo) -> str:
    """What the static filters read of a pod; the pods of one owner share it."""
    node_affinity = (pod.affinity or {}).get("nodeAffinity")
    return json.dumps(
        [pod.node_selector, node_affinity, pod.tolerations], sort_keys=True, default=str
    )


class Ranking:
    """Every node ordered by the resource score a pod of one size gets there, best first,
    per zone; and which nodes a pod of that size fits.

    Brought up to date when read (``catch_up``), so the best nodes of each zone are read from
    its top. Moves only mark their node (``stale``): a plan keeps up to dozens of rankings and
    moves thousands of pods, and most rankings are read far less often than a node moves."""

    def __init__(self, nodes: Sequence[SimNode], size: PodSize, profile: SchedulerProfile) -> None:
        self.size = size
        self.profile = profile
        self.stale: set[int] = set()
        """Indexes of the nodes whose pods moved since this ranking was last brought up to
        date."""
        self.scores = [node.resource_score(size, profile) for node in nodes]
        self.zones: dict[str | None, list[tuple[int, int]]] = {}
        for node in nodes:
            self.zones.setdefault(node.zone, []).append((-self.scores[node.index], node.index))
        for order in self.zones.values():
            order.sort()
        self.fits = {node.index for node in nodes if node.fits(size)}

    def catch_up(self, nodes: Sequence[SimNode]) -> None:
        """Re-rank the nodes that moved since the last read. The result does not depend on
        the order: each node's entry is taken out by its recorded score and put back by
        its new one."""
        for index in self.stale:
            self._update(nodes[index])
        self.stale.clear()

    def _update(self, node: SimNode) -> None:
        order = self.zones[node.zone]
        index = node.index
        del order[bisect_left(order, (-self.scores[index], index))]
        self.scores[index] = node.resource_score(self.size, self.profile)
        insort(order, (-self.scores[index], index))
        if node.fits(self.size):
            self.fits.add(index)
        else:
            self.fits.discard(index)
