"""What LowNodeUtilization and HighNodeUtilization share (upstream ``nodeutilization.go``):
node usage, the classification into under- and over-utilized, and the eviction loop.

Upstream's arithmetic is kept exactly, because the decisions must match: usage percentages
are ``float64(used) / float64(capacity) * 100`` (CPU in millicores); a node's room up to a
threshold is ``int64(threshold * 0.01 * capacity)``; source nodes are ordered by the raw sum
of their usage quantities (millicores + bytes + pod count, so memory dominates).

Where we differ on purpose:
- ties are broken by name (upstream's ``sort.Slice`` is unstable, so its order is arbitrary);
- ``sourceNodeOrder: Percentage`` (opt-in) orders source nodes by the sum of their usage
  percentages over the thresholds' resources instead;
- where usage is the agents' NodeReports (``metricsUtilization.source: NodeReports``, or a
  Prometheus node signal with ``podUsage: NodeReports``; ``usage`` says where usage comes
  from), pods of equal upstream keys are spread across owners in waves of their implicit
  budgets, then go biggest real user first (CPU, then memory; ``spread_order``);
- where there is no pod usage to weigh (a Prometheus node signal), pods of equal upstream
  keys go round robin by owner, owners not yet evicted from in the cycle first, then by uid
  (``round_robin_order``): upstream's order among them is random, and by name one
  Deployment's pods would lead on every node, cycle after cycle;
- every node records where its usage came from (the plan's ``nodes``: ``usageSource``,
  ``fallback``; ``sinceReport`` when its report was settled against the snapshot);
- a node whose agent reports it shutting down, gated or stopped is never room (never an
  under-utilized destination for LowNodeUtilization, never a destination for High);
- ``cooldownSeconds`` (opt-in) skips a pod whose owner lost a pod to us within the cooldown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.errors import (
    NamespaceLimitReached,
    NodeLimitReached,
    TotalLimitReached,
)
from agent.descheduler.core.evictions.planner import owner_uid
from agent.descheduler.core.framework.args import Namespaces
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.plugins.nodeutilization.metrics import NODE_REPORTS
from agent.descheduler.core.plugins.nodeutilization.usage import NodeState, Usage, UsageSource
from agent.descheduler.core.rules.podorder import (
    eviction_order,
    round_robin_order,
    spread_order,
)
from agent.descheduler.model.cluster import CPU, MEMORY, NodeInfo, PodInfo
from agent.descheduler.model.gomath import go_round
from agent.descheduler.plan.shape import NodeTarget
from agent.kubesemantics.taintownership import is_emptying_taint
from agent.kubesemantics.tolerations import tolerates

UNDER = "underutilized"
OVER = "overutilized"
APPROPRIATE = "appropriately utilized"


@dataclass(frozen=True)
class PluginEvictionLimits:
    node: int | None = setting(None, minimum=0)


def include_is_unsupported(namespaces: Namespaces | None) -> list[FieldError]:
    if namespaces is not None and namespaces.include:
        return [
            FieldError(
                "evictableNamespaces.include", "only exclude can be set, inclusion is not supported"
            )
        ]
    return []


def percentages(usage: Mapping[str, int], capacity: Mapping[str, int]) -> dict[str, float]:
    """``ResourceUsageToResourceThreshold``: float64 percentages, 0 where capacity is 0."""
    result: dict[str, float] = {}
    for name, used in usage.items():
        if name not in capacity:
            continue
        total = capacity[name]
        result[name] = float(used) / float(total) * 100 if total > 0 else 0.0
    return result


def room_up_to(
    capacity: Mapping[str, int], thresholds: Mapping[str, float], names: Sequence[str]
) -> Usage:
    """``capNodeCapacitiesToThreshold``: capacity, cut to the threshold where one is set."""
    room: Usage = {}
    for name in names:
        if name not in capacity:
            room[name] = 0
        elif name not in thresholds:
            room[name] = capacity[name]
        else:
            room[name] = int(float(thresholds[name]) * 0.01 * float(capacity[name]))
    return room


def below(percent: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    return all(percent.get(name, 0.0) <= limit for name, limit in limits.items())


def above(percent: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    return any(percent.get(name, 0.0) > limit for name, limit in limits.items())


def usable_as_room(handle: Handle, node: NodeInfo) -> bool:
    report = handle.snapshot.node_usage.get(node.name)
    return report is None or report.usable_as_destination


def record(handle: Handle, plugin: str, state: NodeState, category: str) -> None:
    facts: dict[str, object] = {
        "node": state.node.name,
        "plugin": plugin,
        "profile": handle.profile,
        "category": category,
        "usage": dict(state.usage),
        "usagePercentage": {k: go_round(v) for k, v in sorted(state.percent.items())},
        "usageSource": state.source,
    }
    if state.fallback:
        facts["fallback"] = state.fallback
    if state.since_report:
        facts["sinceReport"] = dict(state.since_report)
    handle.record_node(facts)


def raw_sum(state: NodeState) -> int:
    return sum(state.usage.values())


def order_sources(
    states: list[NodeState], *, ascending: bool, order: str, names: Sequence[str]
) -> list[NodeState]:
    """Upstream's ``sortNodesByUsage`` (raw sum), or the opt-in percentage sum; ties by name."""
    sign = 1 if ascending else -1
    if order == "Percentage":
        return sorted(
            states,
            key=lambda s: (sign * sum(s.percent.get(n, 0.0) for n in names), s.node.name),
        )
    return sorted(states, key=lambda s: (sign * raw_sum(s), s.node.name))


def tolerates_some_node(
    pod: PodInfo, taints_by_node: Sequence[Sequence[Mapping[str, object]]]
) -> bool:
    """``PodToleratesTaints``: every taint of at least one destination is tolerated, with
    upstream's shortcut that a pod with fewer tolerations than a node's taints fails it."""
    tolerations = pod.tolerations
    for taints in taints_by_node:
        if len(tolerations) < len(taints):
            continue
        if all(any(tolerates(t, taint) for t in tolerations) for taint in taints):
            return True
    return False


ContinueCondition = Callable[[NodeState, Mapping[str, int]], bool]
_log = logging.getLogger(__name__)


@dataclass
class EvictionRun:
    """``evictPodsFromSourceNodes`` with its arguments."""

    handle: Handle
    plugin: str
    usage_source: UsageSource
    budget: dict[str, int]
    destinations: Sequence[NodeState]
    keep_going: ContinueCondition
    pod_filter: Callable[[PodInfo], bool]
    excluded_namespaces: frozenset[str] = frozenset()
    per_node_limit: int | None = None
    cooldown_seconds: float = 0.0
    hold: bool = True
    """Whether an eviction a budget refuses now is held (sent once it allows, within the
    cycle; ``evictions.planner``). LowNodeUtilization's are not: its reason, a node over its
    target, stops holding once the cycle's other evictions drain that node, and the
    replacement would come straight back. For the same reason, an eviction of it that an
    implicit budget holds (always held) carries its node's figures (``NodeTarget``), and goes
    only if the node is still above target when it is released. HighNodeUtilization's are
    held: its node only empties further as the cycle goes, so the reason holds, and a node is
    emptied in one cycle instead of one pod per budget per cycle."""
    emptied: list[str] = field(default_factory=list)
    """The source nodes that got at least one eviction, in the order they got their first."""
    evicted_owners: set[str] = field(default_factory=set)
    """The owners (``owner_of``) this run has evicted a pod of, so far."""

    def run(self, sources: Sequence[NodeState]) -> None:
        taints = [
            tuple(t for t in state.node.taints if not is_emptying_taint(t))
            for state in self.destinations
        ]
        for state in sources:
            removable = [pod for pod in state.pods if self.pod_filter(pod)]
            if not removable:
                continue
            try:
                self._evict_from(state, self._ordered(removable, state), taints)
            except TotalLimitReached:
                return

    def _ordered(self, pods: list[PodInfo], state: NodeState) -> list[PodInfo]:
        """Upstream's order. On the agents' figures, equal keys are spread across owners in
        waves of their implicit budgets, then go biggest user first (``spread_order``):
        upstream's order among them is arbitrary, so this stays within it and drains in
        fewer moves. Without pod usage (a Prometheus node signal), equal keys go round robin
        by owner, the owners this run has not evicted from first, then by uid
        (``round_robin_order``): as arbitrary as upstream's, never one owner first on every
        node. On requests and metrics.k8s.io, upstream's order alone, ties by name, so its
        decisions stay as they are (the parity tests hold them)."""
        if not state.pods_by:
            return round_robin_order(pods, owner_of, self.evicted_owners.__contains__)
        if state.pods_by != NODE_REPORTS:
            return eviction_order(pods)
        usage = {p.uid: self.usage_source.pod_usage(p, state) or {} for p in pods}
        return spread_order(
            pods,
            lambda p: (usage[p.uid].get(CPU, 0), usage[p.uid].get(MEMORY, 0)),
            self.handle.evictor.rollout_of,
        )

    def _may_evict(
        self, pod: PodInfo, state: NodeState, taints: list[tuple[Mapping[str, object], ...]]
    ) -> bool:
        """Upstream's checks before an eviction, in its order: a destination's taints are
        tolerated, the preEvictionFilter and the excluded namespaces pass (and ours, the
        churn guard), and the pod's usage is known."""
        evictor = self.handle.evictor
        if not tolerates_some_node(pod, taints):
            return False
        if pod.namespace in self.excluded_namespaces or not evictor.pre_eviction_filter(pod):
            return False
        if self.cooldown_seconds > 0 and evictor.in_cooldown(pod, self.cooldown_seconds):
            return False
        if problem := self.usage_source.pod_problem(pod, state):
            _log.info("%s: unable to get pod usage: %s", self.plugin, problem)
            return False  # upstream logs it and tries the next pod
        return True

    def _evict_from(
        self, state: NodeState, pods: list[PodInfo], taints: list[tuple[Mapping[str, object], ...]]
    ) -> None:
        if not self.keep_going(state, self.budget):
            return
        evictor = self.handle.evictor
        target = None if self.hold else self._target(state)
        evicted = 0
        for pod in pods:
            if self.per_node_limit is not None and evicted >= self.per_node_limit:
                break
            if not self._may_evict(pod, state, taints):
                continue
            pod_usage = self.usage_source.pod_usage(pod, state)
            try:
                if not evictor.evict(pod, self.plugin, hold=self.hold, while_over=target):
                    continue  # a PDB refused it: not evicted, as upstream on a 429
            except NodeLimitReached:
                return
            except NamespaceLimitReached:
                continue  # upstream logs "eviction failed" and tries the next pod
            self.evicted_owners.add(owner_of(pod))
            if pod_usage is None and self.per_node_limit is None:
                # No pod usage to weigh (a Prometheus node signal): one eviction per node,
                # as upstream's "only a single pod eviction is allowed".
                self.emptied.append(state.node.name)
                return
            evicted += 1
            if evicted == 1:
                self.emptied.append(state.node.name)
            if pod_usage is None:
                continue  # upstream: up to evictionLimits.node, usage not weighed
            for name in self.budget:
                amount = pod_usage.get(name, 0)
                state.usage[name] = state.usage.get(name, 0) - amount
                self.budget[name] -= amount
            if not self.keep_going(state, self.budget):
                break

    def _target(self, state: NodeState) -> NodeTarget | None:
        """The node as it stands before its first eviction, for a held one to be checked
        against when released; ``None`` without pod usage to weigh (a Prometheus node
        signal: one eviction per node, nothing to recount)."""
        if not state.pods_by:
            return None
        source = self.usage_source
        weighed = {pod.uid: source.pod_usage(pod, state) or {} for pod in state.pods}
        return NodeTarget(
            node=state.node.name,
            usage=dict(state.usage),
            target=dict(state.available),
            pods=weighed,  # every pod the node's usage counts: other plugins' leave it too
        )


def owner_of(pod: PodInfo) -> str:
    """The pod's owner for the round robin: its controller's (or first owner's) uid; a bare
    pod is its own."""
    return owner_uid(pod) or pod.uid


def budget_over(states: Sequence[NodeState], names: Sequence[str]) -> dict[str, int]:
    """``assessAvailableResourceInNodes``: room minus usage, summed over the destinations."""
    budget = dict.fromkeys(names, 0)
    for state in states:
        for name in names:
            budget[name] += state.available.get(name, 0) - state.usage.get(name, 0)
    return budget


def every_budget_positive(budget: Mapping[str, int]) -> bool:
    return all(amount > 0 for amount in budget.values())
