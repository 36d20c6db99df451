"""Where each evicted pod's replacement would land, in the order the live loop sends them.

Upstream's dry run cannot say where evicted pods go (#1584), and that is the first question
about any plan. This answers it for the offline plan: for each eviction, the pod its
controller creates in its place (same spec) is scheduled as the default kube-scheduler would
schedule it (``simulation``: its filters, its scores and its pick), on the cluster as the plan
leaves it so far. Evictions go in the order the live loop sends them: the allowed ones in the
plan's order, then the ones a budget holds (the live loop sends those as their budgets
allow, within the cycle).

**Replacements of one window come in any order.** The live loop has up to eight evictions
in flight (``evictionConcurrency``); they complete, and the ReplicaSets create and the
scheduler places their replacements, in no fixed order. So the plan takes evictions in
windows of eight: all of a window's pods leave their nodes, then each replacement is placed
in the plan's order, and its candidates (every node tied at the best total,
``destinationCandidates`` in the plan) also include the nodes tied for it had it been
scheduled before the rest of its window, and after all of it (the window in reverse). A
replay of a real scheduler in its own order matches 98 % of the placements; in the plan's
order, the windows are what keeps the candidates right while the real order shuffles
within them. The ``destination`` is the first candidate by name, which is where the
simulation puts the replacement before placing the next one.

Where this still differs from the real scheduler: ties are broken at random there; the
replacements' real creation order (evictions finish in any order, budgets release held ones
when they allow) differs from the plan's; an evicted pod is gone from its node before the next
pod is placed (a terminating pod holds its room for its grace period); pending pods do not
compete for room; in a cluster of more than 100 nodes the scheduler scores only a share of
them (``percentageOfNodesToScore``), starting where its last search stopped; and a scheduler
configured with other plugins or weights scores differently.

Pods that get no destination: pods without a controller (nothing recreates them), finished
pods (their controller replaced them when they finished). A DaemonSet pod comes back on its
own node, so that node is its destination.

Pure: a snapshot, the planned evictions and the plan's taints in (a node the plan taints
before its evictions is scored with that taint), placements and per-node loads out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent.descheduler.core.placement.profile import DEFAULT_PROFILE, SchedulerProfile
from agent.descheduler.core.placement.simulation import Simulation
from agent.descheduler.model.cluster import ClusterSnapshot, PodInfo
from agent.descheduler.plan.destinations import Placement, PlacementResult
from agent.descheduler.plan.shape import Plan, PlannedEviction, TaintChange
from agent.kubesemantics.wellknown import DAEMON_SET_KIND, FINISHED_PHASES

IN_FLIGHT = 8
"""How many evictions the live loop has in flight at once (the default of its
``evictionConcurrency``, which reads it from here): the window of replacements scheduled in no
fixed order."""
BLOCKED = "held by a PodDisruptionBudget: placed as if it went once the budget allowed"
HELD_BY_IMPLICIT_BUDGET = (
    "held by its workload's implicit budget: placed as if it went once a replacement was Ready"
)
REFUSED = "refused by a PodDisruptionBudget: not sent this cycle (the next one plans again)"
NOT_RECREATED = "no controller: nothing recreates it"
FINISHED_NOTE = "finished: its controller has replaced it already"
DAEMON_POD = "DaemonSet pod: recreated on the same node"


def _is_daemon_pod(pod: PodInfo) -> bool:
    controller = pod.controller
    return controller is not None and controller.kind == DAEMON_SET_KIND


def place(
    snapshot: ClusterSnapshot,
    evictions: Sequence[PlannedEviction],
    *,
    fast: bool = True,
    profile: SchedulerProfile = DEFAULT_PROFILE,
    window: int = IN_FLIGHT,
    taints: Sequence[TaintChange] = (),
) -> PlacementResult:
    """Every planned eviction's destination and the nodes' loads: the allowed evictions in
    the plan's order, then the held ones in theirs (the order the live loop sends them), in
    windows of ``window`` sent together (see the module docstring), on the nodes as the
    plan's ``taints`` leave them (the live loop applies those before any eviction)."""
    snapshot = with_taint_changes(snapshot, taints)
    wanted = {(e.node, e.uid) for e in evictions}
    by_uid = {
        pod.uid: pod
        for node in {node for node, _ in wanted}
        for pod in snapshot.pods_on(node)
        if (node, pod.uid) in wanted
    }
    simulation = Simulation(snapshot, fast=fast, profile=profile)
    placements: dict[int, Placement] = {}
    # Those sent at once first, then the held ones (a PDB's or an implicit budget's).
    order = [i for i, e in enumerate(evictions) if not (e.blocked_by_pdb or e.held)] + [
        i for i, e in enumerate(evictions) if e.held
    ]
    for i, eviction in enumerate(evictions):
        if eviction.blocked_by_pdb and not eviction.held:
            placements[i] = Placement(None, REFUSED)
    for start in range(0, len(order), max(1, window)):
        positions = order[start : start + max(1, window)]
        pods = [by_uid.get(evictions[position].uid) for position in positions]
        # The window's evictions are in flight together: all of them leave their nodes, and
        # each replacement may be scheduled before any of the others.
        for pod in pods:
            if pod is not None:
                simulation.evict(pod)
        first = [_other_order(simulation, pod) for pod in pods]
        forward = [_destination(simulation, pod) if pod is not None else None for pod in pods]
        last = _in_reverse(simulation, pods, forward)
        for position, pod, found, early, late in zip(
            positions, pods, forward, first, last, strict=True
        ):
            if pod is None or found is None:  # pragma: no cover - pods of the snapshot
                placements[position] = Placement(None, "not in the snapshot")
                continue
            placement = found
            if placement.node is not None and placement.note != DAEMON_POD:
                together = tuple(sorted({*placement.candidates, *early, *late}))
                placement = replace(placement, candidates=together)
            if evictions[position].blocked_by_pdb and placement.node is not None:
                placement = replace(placement, note=BLOCKED)
            elif evictions[position].implicit_budget and placement.node is not None:
                placement = replace(placement, note=HELD_BY_IMPLICIT_BUDGET)
            placements[position] = placement
    return PlacementResult(tuple(placements[i] for i in range(len(evictions))), simulation.loads())


def with_taint_changes(
    snapshot: ClusterSnapshot, changes: Sequence[TaintChange]
) -> ClusterSnapshot:
    """The snapshot with a plan's taint changes made. An add leaves a taint already in its
    key and effect slot as it is, as the live loop does (it never changes another's)."""
    if not changes:
        return snapshot
    nodes = dict(snapshot.nodes)
    for change in changes:
        node = nodes.get(change.node)
        if node is None:
            continue
        others = tuple(
            taint
            for taint in node.taints
            if (taint.get("key"), taint.get("effect")) != (change.key, change.effect)
        )
        if change.add:
            if len(others) < len(node.taints):
                continue
            taint = {"key": change.key, "value": change.value, "effect": change.effect}
            nodes[change.node] = replace(node, taints=(*node.taints, taint))
        else:
            nodes[change.node] = replace(node, taints=others)
    return replace(snapshot, nodes=nodes)


def _other_order(simulation: Simulation, pod: PodInfo | None) -> tuple[str, ...]:
    """The nodes tied for ``pod`` were it scheduled now, before the pods of its window that
    precede it in the plan; nothing for a pod that is not scheduled."""
    if pod is None or pod.phase in FINISHED_PHASES or pod.controller is None or _is_daemon_pod(pod):
        return ()
    return simulation.pick(pod).candidates


def _in_reverse(
    simulation: Simulation,
    pods: Sequence[PodInfo | None],
    forward: Sequence[Placement | None],
) -> list[tuple[str, ...]]:
    """Each pod's tied nodes were the window scheduled in reverse (each pod after all the
    others of its window); the simulation is left as the forward placements made it."""
    placed = [
        (index, pod, placement.node, placement.note == DAEMON_POD)
        for index, (pod, placement) in enumerate(zip(pods, forward, strict=True))
        if pod is not None and placement is not None and placement.node is not None
    ]
    for _, pod, _, _ in placed:
        simulation.unland(pod)
    late: dict[int, tuple[str, ...]] = {}
    landed: list[PodInfo] = []
    for index, pod, node, daemon in reversed(placed):
        target: str | None = node
        if not daemon:  # a DaemonSet pod comes back to its node whatever the order
            picked = simulation.pick(pod)
            late[index], target = picked.candidates, picked.node
        if target is not None:
            simulation.land(pod, target)
            landed.append(pod)
    for pod in landed:
        simulation.unland(pod)
    for _, pod, node, _ in placed:
        simulation.land(pod, node)
    return [late.get(index, ()) for index in range(len(pods))]


def _destination(simulation: Simulation, pod: PodInfo) -> Placement:
    if pod.phase in FINISHED_PHASES:
        return Placement(None, FINISHED_NOTE)
    if pod.controller is None:
        return Placement(None, NOT_RECREATED)
    if _is_daemon_pod(pod):
        simulation.land(pod, pod.node_name)
        return Placement(pod.node_name, DAEMON_POD, (pod.node_name,))
    placement = simulation.pick(pod)
    if placement.node is not None:
        simulation.land(pod, placement.node)
    return placement


def with_destinations(plan: Plan, result: PlacementResult) -> Plan:
    """The plan with each eviction's ``destination`` and ``destinationCandidates`` filled in
    (``None`` and ``()`` where there is none)."""
    evictions = [
        replace(eviction, destination=placement.node, candidates=placement.candidates)
        for eviction, placement in zip(plan.evictions, result.placements, strict=True)
    ]
    return replace(plan, evictions=evictions)
