"""Where each evicted pod would most likely land: a default kube-scheduler's pick, offline.

Upstream's dry run cannot say where evicted pods go (#1584), and that is the first question
about any plan. This answers it for the offline plan: for each allowed eviction, in the
plan's order, the pod its controller creates in its place (same spec) is scheduled as the
default kube-scheduler would schedule it, on the snapshot as the plan leaves it so far.

**Filter** (kube-scheduler's filter plugins; every one must pass):
- the node is Ready (the scheduler sees NotReady nodes through their ``not-ready`` taint),
  and it is not the node the pod is evicted from;
- NodeUnschedulable: a cordoned node only for a pod tolerating
  ``node.kubernetes.io/unschedulable:NoSchedule``;
- ours: a node whose agent reports it shutting down, its readiness gate held or the agent
  stopped is no place to go (``NodeUsage.usable_as_destination``);
- TaintToleration: every NoSchedule/NoExecute taint tolerated (``agent.kube.tolerations``);
- NodeAffinity: nodeSelector and required node affinity (``agent.kube.nodeaffinity``);
- NodeResourcesFit: each requested resource fits allocatable minus the requests of the pods
  there (pods this plan placed there earlier included, pods it evicted from there gone), and
  a pod slot is free;
- InterPodAffinity, its required anti-affinity half (``antiaffinity``): no pod the pod's
  terms select in the node's topology domain, and no pod whose terms select the pod there;
- PodTopologySpread, ``DoNotSchedule`` constraints (``topology``): the node carries the key
  and placing the pod there keeps the skew within ``maxSkew``, counted (once per pod, as
  the scheduler's PreFilter) on the cluster as the plan leaves it so far.

**Score:** NodeResourcesFit's ``LeastAllocated`` on cpu and memory, weight 1 each: per
resource ``(allocatable - requested) * 100 // allocatable`` with the pod added (0 when it
does not fit, a resource with no allocatable left out), averaged in integers. As the scheduler
scores, a pod asking no cpu counts 100m and one asking no memory 200Mi
(``NonZeroRequested``); the scheduler applies these per container, the projection keeps pod
totals, so here they apply per pod (the same for single-container pods). The highest score
wins; ties go to the first node by name (the scheduler picks at random among them).

Where this is not a real scheduler, on purpose: only LeastAllocated scores (the default
profile also weighs BalancedAllocation, ImageLocality, preferred affinities, ScheduleAnyway
spread and PreferNoSchedule taints), hence "most likely"; an evicted pod is gone from its
node before the next pod is placed (a terminating pod holds its room for its grace period);
pending pods do not compete for room.

Pods that get no destination: evictions a PDB blocks (nothing moves), pods without a
controller (nothing recreates them), finished pods (their controller replaced them when they
finished). A DaemonSet pod comes back on its own node, so that node is its destination.

Pure: a snapshot and the planned evictions in, placements and per-node loads out.
"""

from __future__ import annotations

import json
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import msgspec

from agent.descheduler.antiaffinity import (
    has_required_anti_affinity,
    scheduler_anti_affinity_rejection,
)
from agent.descheduler.model import CPU, MEMORY, PODS, ClusterSnapshot, NodeInfo, PodInfo
from agent.descheduler.plan import Plan, PlannedEviction
from agent.descheduler.topology import scheduler_spread_counts, spread_rejection
from agent.kube.labelselector import SelectorError
from agent.kube.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kube.tolerations import NO_SCHEDULE, tolerates, untolerated

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU_REQUEST = 100
"""kube-scheduler's ``DefaultMilliCPURequest``, what a pod asking no cpu counts in scores."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""kube-scheduler's ``DefaultMemoryRequest`` (200Mi)."""
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": NO_SCHEDULE}
"""What a cordoned node means to the scheduler's NodeUnschedulable filter."""
FINISHED = frozenset({"Succeeded", "Failed"})
MAX_RANKINGS = 64
"""Pod sizes whose node ranking is kept (see ``Simulation``); a size past them costs a sort."""

BLOCKED = "blocked by a PodDisruptionBudget: not evicted"
NOT_RECREATED = "no controller: nothing recreates it"
FINISHED_NOTE = "finished: its controller has replaced it already"
DAEMON_POD = "DaemonSet pod: recreated on the same node"
OWN_NODE = "the node it is evicted from"


@dataclass(frozen=True, slots=True)
class Placement:
    node: str | None
    """The destination; ``None`` when the pod goes nowhere (see ``note``)."""
    note: str = ""
    """Why there is no destination, or what is special about it."""


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """A node's requests before and after the plan, against its allocatable."""

    node: str
    allocatable: Mapping[str, int]
    before: Mapping[str, int]
    after: Mapping[str, int]


@dataclass(frozen=True)
class PlacementResult:
    placements: tuple[Placement, ...]
    """One per planned eviction, in the plan's order."""
    loads: tuple[NodeLoad, ...]
    """Every node of the snapshot, by name."""


@dataclass
class _Node:
    """One node's state as the simulation moves pods: plain ints, for the inner loop."""

    info: NodeInfo
    alloc_cpu: int
    alloc_memory: int
    alloc_pods: int
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
        self.cpu += sign * cpu
        self.memory += sign * memory
        self.pods += sign
        self.nonzero_cpu += sign * (cpu or DEFAULT_MILLI_CPU_REQUEST)
        self.nonzero_memory += sign * (memory or DEFAULT_MEMORY_REQUEST)
        for name, amount in requests.items():
            if name not in (CPU, MEMORY, PODS):
                self.other[name] = self.other.get(name, 0) + sign * amount

    def load(self) -> dict[str, int]:
        return {CPU: self.cpu, MEMORY: self.memory, PODS: self.pods}


def _new_node(info: NodeInfo) -> _Node:
    allocatable = info.allocatable
    return _Node(
        info=info,
        alloc_cpu=allocatable.get(CPU, 0),
        alloc_memory=allocatable.get(MEMORY, 0),
        alloc_pods=allocatable.get(PODS, 0),
    )


def _least_allocated(requested: int, allocatable: int) -> int:
    if requested > allocatable:
        return 0
    return (allocatable - requested) * MAX_NODE_SCORE // allocatable


def score(node: _Node, pod: PodInfo) -> int:
    """``LeastAllocated`` over cpu and memory, weight 1 each, with ``pod`` added."""
    cpu = pod.requests.get(CPU, 0) or DEFAULT_MILLI_CPU_REQUEST
    memory = pod.requests.get(MEMORY, 0) or DEFAULT_MEMORY_REQUEST
    return _scored(node, cpu, memory)


def _scored(node: _Node, cpu: int, memory: int) -> int:
    total = weights = 0
    if node.alloc_cpu > 0:
        total += _least_allocated(node.nonzero_cpu + cpu, node.alloc_cpu)
        weights += 1
    if node.alloc_memory > 0:
        total += _least_allocated(node.nonzero_memory + memory, node.alloc_memory)
        weights += 1
    return total // weights if weights else 0


def resource_misfit(node: _Node, pod: PodInfo) -> str | None:
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
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
        return "node is unschedulable"
    if node_selector_mismatch(pod.node_selector, node.labels):
        return "nodeSelector does not match"
    if required_affinity_mismatch({"affinity": pod.affinity or {}}, node.labels, node.name):
        return "required node affinity does not match"
    if untolerated(node.taints, list(pod.tolerations)):
        return "untolerated taint"
    return None


def _static_key(pod: PodInfo) -> str:
    """What the static filters read of a pod; the pods of one owner share it."""
    node_affinity = (pod.affinity or {}).get("nodeAffinity")
    return json.dumps(
        [pod.node_selector, node_affinity, pod.tolerations], sort_keys=True, default=str
    )


class _Ranking:
    """Every node ordered by the score a pod of one size gets there: best first, then by name.

    Kept up to date as pods move, so a pick reads it from the top and usually stops at the
    first node: the best-scoring node that passes the filters is the scheduler's pick."""

    def __init__(self, nodes: Sequence[_Node], cpu: int, memory: int) -> None:
        self.cpu = cpu
        self.memory = memory
        self.scores = [_scored(node, cpu, memory) for node in nodes]
        self.order = sorted((-points, index) for index, points in enumerate(self.scores))

    def update(self, index: int, node: _Node) -> None:
        del self.order[bisect_left(self.order, (-self.scores[index], index))]
        self.scores[index] = _scored(node, self.cpu, self.memory)
        insort(self.order, (-self.scores[index], index))


class Simulation:
    """The nodes' requests as the plan moves pods, and the scheduler's pick for each pod.

    A plan can move thousands of pods across thousands of nodes, and scoring every node for
    every pod is their product (10 million scores at the 1,000-node parity state). A score
    depends on the node and on the pod's cpu and memory only, and the pods of a cluster come
    in few sizes: each size seen keeps a ``_Ranking`` of the nodes (at most
    ``MAX_RANKINGS``, the least recently used dropped), updated as pods move.
    """

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.nodes = [_new_node(snapshot.nodes[name]) for name in sorted(snapshot.nodes)]
        self._index = {node.info.name: index for index, node in enumerate(self.nodes)}
        for node in self.nodes:
            for pod in snapshot.pods_on(node.info.name):
                if pod.phase not in FINISHED:
                    node.add(pod, +1)
        self.before = {node.info.name: node.load() for node in self.nodes}
        self._rankings: dict[tuple[int, int], _Ranking] = {}
        """By pod size (cpu, memory, with the scheduler's non-zero defaults); the dict's order
        is the order of last use."""
        self.gone: set[str] = set()
        """UIDs of the pods the plan evicted so far."""
        self.placed: list[PodInfo] = []
        """The replacement pods placed so far, each with ``node_name`` its destination."""
        self._static: dict[str, tuple[frozenset[int], Counter[str]]] = {}
        self._placed_on: dict[str, list[PodInfo]] = {}
        self._anti_affinity = [pod for pod in self.pods() if has_required_anti_affinity(pod)]
        """Pods with required anti-affinity, as the plan leaves them: every newcomer is
        checked against their terms (few clusters have many)."""

    def pods(self) -> Iterable[PodInfo]:
        """Every pod as the plan leaves the cluster so far: evicted ones gone, placed ones in."""
        for node in self.nodes:
            yield from self.pods_on(node.info.name)

    def pods_on(self, node_name: str) -> Iterable[PodInfo]:
        """The pods on a node as the plan leaves it so far."""
        for pod in self.snapshot.pods_on(node_name):
            if pod.uid not in self.gone:
                yield pod
        yield from self._placed_on.get(node_name, ())

    def _statically_feasible(self, pod: PodInfo) -> tuple[frozenset[int], Counter[str]]:
        key = _static_key(pod)
        found = self._static.get(key)
        if found is None:
            feasible: set[int] = set()
            rejected: Counter[str] = Counter()
            for index, node in enumerate(self.nodes):
                reason = static_misfit(pod, node.info, self.snapshot)
                if reason is None:
                    feasible.add(index)
                else:
                    rejected[reason] += 1
            found = self._static[key] = (frozenset(feasible), rejected)
        return found

    def _move(self, index: int, pod: PodInfo, sign: int) -> None:
        """Add or remove ``pod``'s requests on a node, and re-rank the node."""
        node = self.nodes[index]
        node.add(pod, sign)
        for ranking in self._rankings.values():
            ranking.update(index, node)

    def _ranking(self, pod: PodInfo) -> _Ranking:
        size = (
            pod.requests.get(CPU, 0) or DEFAULT_MILLI_CPU_REQUEST,
            pod.requests.get(MEMORY, 0) or DEFAULT_MEMORY_REQUEST,
        )
        ranking = self._rankings.pop(size, None)
        if ranking is None:
            if len(self._rankings) >= MAX_RANKINGS:
                del self._rankings[next(iter(self._rankings))]
            ranking = _Ranking(self.nodes, *size)
        self._rankings[size] = ranking  # last used: moved to the end
        return ranking

    def evict(self, pod: PodInfo) -> None:
        index = self._index.get(pod.node_name)
        if index is not None and pod.uid not in self.gone and pod.phase not in FINISHED:
            self._move(index, pod, -1)
        self.gone.add(pod.uid)
        if has_required_anti_affinity(pod):
            self._anti_affinity = [p for p in self._anti_affinity if p.uid != pod.uid]

    def pick(self, pod: PodInfo) -> Placement:
        """The node the scheduler would pick for a new pod like ``pod``, not on its node."""
        feasible, rejected = self._statically_feasible(pod)
        reasons = Counter(rejected)
        try:
            inter_pod = self._inter_pod_check(pod)
        except SelectorError as error:
            return Placement(None, f"topology spread selector does not parse: {error}")
        for _, index in self._ranking(pod).order:
            if index not in feasible:
                continue
            node = self.nodes[index]
            if node.info.name == pod.node_name:
                reasons[OWN_NODE] += 1
                continue
            reason = resource_misfit(node, pod) or (inter_pod and inter_pod(node.info))
            if reason:
                reasons[_reason_kind(reason)] += 1
                continue
            return Placement(node.info.name)  # the best score, the first name among equals
        return Placement(None, _no_fit(len(self.nodes), reasons))

    def _inter_pod_check(self, pod: PodInfo) -> Callable[[NodeInfo], str | None] | None:
        """The anti-affinity and spread filters for ``pod`` (spread counted once, as the
        scheduler's PreFilter does); ``None`` when neither can reject it (most pods)."""
        spread = scheduler_spread_counts(pod, self.snapshot.nodes.values(), self.pods_on)
        if not spread and not self._anti_affinity and not has_required_anti_affinity(pod):
            return None
        nodes = self.snapshot.nodes
        with_terms = self._anti_affinity

        def check(node: NodeInfo) -> str | None:
            return spread_rejection(spread, node) or scheduler_anti_affinity_rejection(
                pod, node, nodes, self.pods_on, with_terms
            )

        return check

    def land(self, pod: PodInfo, node_name: str) -> None:
        """Put the replacement of ``pod`` on ``node_name``."""
        ghost = msgspec.structs.replace(
            pod, uid=f"{pod.uid}/replacement", node_name=node_name, deleting=False
        )
        self._move(self._index[node_name], ghost, +1)
        self.placed.append(ghost)
        self._placed_on.setdefault(node_name, []).append(ghost)
        if has_required_anti_affinity(ghost):
            self._anti_affinity = [*self._anti_affinity, ghost]

    def loads(self) -> tuple[NodeLoad, ...]:
        return tuple(
            NodeLoad(
                node=node.info.name,
                allocatable={
                    CPU: node.alloc_cpu,
                    MEMORY: node.alloc_memory,
                    PODS: node.alloc_pods,
                },
                before=self.before[node.info.name],
                after=node.load(),
            )
            for node in self.nodes
        )


def _reason_kind(reason: str) -> str:
    """A filter's reason without the names in it, so that nodes count together in the no-fit
    summary ("3 node(s) didn't match pod anti-affinity rules", as the scheduler says)."""
    if "anti-affinity" in reason:
        return "pod anti-affinity"
    if "topology spread" in reason:
        return "topology spread constraints"
    return reason


def _no_fit(total: int, reasons: Counter[str]) -> str:
    """The scheduler's "0/N nodes are available: ..." summary."""
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return f"0/{total} nodes are available: {parts}" if parts else f"0/{total} nodes"


def _is_daemon_pod(pod: PodInfo) -> bool:
    controller = pod.controller
    return controller is not None and controller.kind == "DaemonSet"


def place(snapshot: ClusterSnapshot, evictions: Sequence[PlannedEviction]) -> PlacementResult:
    """Every planned eviction's destination, in the plan's order, and the nodes' loads."""
    wanted = {(e.node, e.uid) for e in evictions}
    by_uid = {
        pod.uid: pod
        for node in {node for node, _ in wanted}
        for pod in snapshot.pods_on(node)
        if (node, pod.uid) in wanted
    }
    simulation = Simulation(snapshot)
    placements: list[Placement] = []
    for eviction in evictions:
        pod = by_uid.get(eviction.uid)
        if eviction.blocked_by_pdb:
            placements.append(Placement(None, BLOCKED))
            continue
        if pod is None:  # pragma: no cover - the cycle plans only pods of the snapshot
            placements.append(Placement(None, "not in the snapshot"))
            continue
        simulation.evict(pod)
        placements.append(_destination(simulation, pod))
    return PlacementResult(tuple(placements), simulation.loads())


def _destination(simulation: Simulation, pod: PodInfo) -> Placement:
    if pod.phase in FINISHED:
        return Placement(None, FINISHED_NOTE)
    if pod.controller is None:
        return Placement(None, NOT_RECREATED)
    if _is_daemon_pod(pod):
        simulation.land(pod, pod.node_name)
        return Placement(pod.node_name, DAEMON_POD)
    placement = simulation.pick(pod)
    if placement.node is not None:
        simulation.land(pod, placement.node)
    return placement


def with_destinations(plan: Plan, result: PlacementResult) -> Plan:
    """The plan with each eviction's ``destination`` filled in (``None`` where none)."""
    evictions = [
        replace(eviction, destination=placement.node)
        for eviction, placement in zip(plan.evictions, result.placements, strict=True)
    ]
    return replace(plan, evictions=evictions)
