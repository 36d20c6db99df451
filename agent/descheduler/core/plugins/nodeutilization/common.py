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
- ``metricsUtilization.source: NodeReports`` reads the agents' real usage from the snapshot
  and falls back to requests for a node whose report is missing or stale (recorded in the
  plan's ``nodes`` as ``usageSource``/``fallback``); on such a node, pods of equal upstream
  keys are spread across owners, then go biggest real user first (``spread_order``);
- a node whose agent reports it shutting down, gated or stopped is never room (never an
  under-utilized destination for LowNodeUtilization, never a destination for High);
- ``cooldownSeconds`` (opt-in) skips a pod whose owner lost a pod to us within the cooldown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.errors import (
    DeschedulerError,
    NamespaceLimitReached,
    NodeLimitReached,
    TotalLimitReached,
)
from agent.descheduler.core.framework.args import Namespaces
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.rules.podorder import (  # noqa: F401 - eviction_key: the parity test reads it from here
    eviction_key,
    eviction_order,
    spread_order,
)
from agent.descheduler.model.cluster import CPU, MEMORY, PODS, NodeInfo, PodInfo
from agent.kube.taintownership import is_emptying_taint
from agent.kube.tolerations import tolerates

UNDER = "underutilized"
OVER = "overutilized"
APPROPRIATE = "appropriately utilized"
NODE_REPORTS = "NodeReports"
REQUESTS = "requests"
FINISHED = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class PrometheusQuery:
    query: str = setting("")


@dataclass(frozen=True)
class MetricsUtilization:
    metrics_server: bool = setting(False)
    source: Literal["", "KubernetesMetrics", "Prometheus", "NodeReports"] = setting("")
    prometheus: PrometheusQuery | None = setting(None)

    def validate(self) -> list[FieldError]:
        errors = []
        if self.source == "KubernetesMetrics" and self.metrics_server:
            errors.append(
                FieldError(
                    "",
                    "it is not allowed to set both the KubernetesMetrics source and metricsServer",
                )
            )
        if self.source == "KubernetesMetrics" and self.prometheus is not None:
            errors.append(FieldError("prometheus", "not allowed when source is KubernetesMetrics"))
        if self.source == "Prometheus" and (self.prometheus is None or not self.prometheus.query):
            errors.append(FieldError("prometheus.query", "required when source is Prometheus"))
        return errors

    @property
    def node_reports(self) -> bool:
        """Real usage from the snapshot's ``node_usage``: our NodeReports, or metrics-server
        (``KubernetesMetrics``/``metricsServer``) when the runtime fills it from there; a node
        without fresh figures falls back to requests, and the plan says so."""
        return self.source in (NODE_REPORTS, "KubernetesMetrics") or self.metrics_server

    def unsupported(self) -> str:
        if self.source == "Prometheus":
            return "metricsUtilization.source Prometheus is not supported by this version"
        return ""


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


Usage = dict[str, int]


@dataclass
class NodeState:
    """One node's usage during the plugin's run (upstream's ``NodeInfo``)."""

    node: NodeInfo
    pods: list[PodInfo]
    usage: Usage
    percent: dict[str, float] = field(default_factory=dict)
    available: Usage = field(default_factory=dict)
    source: str = REQUESTS
    fallback: str = ""


def resource_names(thresholds: Mapping[str, float]) -> list[str]:
    """The thresholds' resources plus cpu, memory and pods (``uniquifyResourceNames``)."""
    return sorted({*thresholds, CPU, MEMORY, PODS})


class UsageSource:
    """Node and pod usage by requests, or by the agents' reports where fresh."""

    def __init__(
        self, handle: Handle, names: Sequence[str], metrics: MetricsUtilization | None
    ) -> None:
        if metrics is not None and (reason := metrics.unsupported()):
            raise DeschedulerError(reason)
        node_reports = metrics is not None and metrics.node_reports
        self.handle = handle
        self.names = list(names)
        self.node_reports = node_reports

    def node_state(self, node: NodeInfo) -> NodeState:
        pods = [p for p in self.handle.snapshot.pods_on(node.name) if p.phase not in FINISHED]
        usage: Usage = dict.fromkeys(self.names, 0)
        for pod in pods:
            for name in self.names:
                if name != PODS:
                    usage[name] += pod.requests.get(name, 0)
        if PODS in usage:
            usage[PODS] = len(pods)
        state = NodeState(node=node, pods=pods, usage=usage)
        if self.node_reports:
            report = self.handle.snapshot.node_usage.get(node.name)
            if report is None or report.stale:
                state.fallback = "missing" if report is None else "stale"
            else:
                state.source = NODE_REPORTS
                for name in (CPU, MEMORY):
                    if name in usage and name in report.usage:
                        usage[name] = report.usage[name]
        return state

    def pod_usage(self, pod: PodInfo, state: NodeState) -> Usage:
        usage = {name: pod.requests.get(name, 0) for name in self.names}
        if PODS in usage:
            usage[PODS] = 1
        if state.source == NODE_REPORTS:
            report = self.handle.snapshot.node_usage[state.node.name]
            measured = report.pod_usage.get(pod.uid)
            if measured is not None:
                for name in (CPU, MEMORY):
                    if name in usage and name in measured:
                        usage[name] = measured[name]
        return usage


def percentages(usage: Mapping[str, int], capacity: Mapping[str, int]) -> dict[str, float]:
    """``ResourceUsageToResourceThreshold``: float64 percentages, 0 where capacity is 0."""
    result: dict[str, float] = {}
    for name, used in usage.items():
        if name not in capacity:
            continue
        total = capacity[name]
        result[name] = float(used) / float(total) * 100 if total > 0 else 0.0
    return result


def room_up_to(node: NodeInfo, thresholds: Mapping[str, float], names: Sequence[str]) -> Usage:
    """``capNodeCapacitiesToThreshold``: capacity, cut to the threshold where one is set."""
    room: Usage = {}
    for name in names:
        if name not in node.allocatable:
            room[name] = 0
        elif name not in thresholds:
            room[name] = node.allocatable[name]
        else:
            room[name] = int(float(thresholds[name]) * 0.01 * float(node.allocatable[name]))
    return room


def below(percent: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    return all(percent.get(name, 0.0) <= limit for name, limit in limits.items())


def above(percent: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    return any(percent.get(name, 0.0) > limit for name, limit in limits.items())


def usable_as_room(handle: Handle, node: NodeInfo) -> bool:
    report = handle.snapshot.node_usage.get(node.name)
    return report is None or report.usable_as_destination


def go_round(value: float) -> int:
    """Go's ``math.Round``: halves away from zero (Python's ``round`` goes to even)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


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
    replacement would come straight back. HighNodeUtilization's are: its node only empties
    further as the cycle goes, so the reason holds, and a node is emptied in one cycle
    instead of one pod per budget per cycle."""
    emptied: list[str] = field(default_factory=list)
    """The source nodes that got at least one eviction, in the order they got their first."""

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
        """Upstream's order. On real usage (any source but requests), equal keys are spread
        across owners in waves of their implicit budgets, then biggest user first
        (``spread_order``): upstream's order among them is arbitrary, so this stays within
        it. On requests, upstream's order alone, so its decisions stay as they are."""
        if state.source == REQUESTS:
            return eviction_order(pods)
        usage = {p.uid: self.usage_source.pod_usage(p, state) for p in pods}
        return spread_order(
            pods,
            lambda p: (usage[p.uid].get(CPU, 0), usage[p.uid].get(MEMORY, 0)),
            self.handle.evictor.rollout_of,
        )

    def _evict_from(
        self, state: NodeState, pods: list[PodInfo], taints: list[tuple[Mapping[str, object], ...]]
    ) -> None:
        if not self.keep_going(state, self.budget):
            return
        evictor = self.handle.evictor
        evicted = 0
        for pod in pods:
            if self.per_node_limit is not None and evicted >= self.per_node_limit:
                break
            if not tolerates_some_node(pod, taints):
                continue
            if pod.namespace in self.excluded_namespaces or not evictor.pre_eviction_filter(pod):
                continue
            if self.cooldown_seconds > 0 and evictor.in_cooldown(pod, self.cooldown_seconds):
                continue
            pod_usage = self.usage_source.pod_usage(pod, state)
            try:
                if not evictor.evict(pod, self.plugin, hold=self.hold):
                    continue  # a PDB refused it: not evicted, as upstream on a 429
            except NodeLimitReached:
                return
            except NamespaceLimitReached:
                continue  # upstream logs "eviction failed" and tries the next pod
            evicted += 1
            if evicted == 1:
                self.emptied.append(state.node.name)
            for name in self.budget:
                amount = pod_usage.get(name, 0)
                state.usage[name] = state.usage.get(name, 0) - amount
                self.budget[name] -= amount
            if not self.keep_going(state, self.budget):
                break


def budget_over(states: Sequence[NodeState], names: Sequence[str]) -> dict[str, int]:
    """``assessAvailableResourceInNodes``: room minus usage, summed over the destinations."""
    budget = dict.fromkeys(names, 0)
    for state in states:
        for name in names:
            budget[name] += state.available.get(name, 0) - state.usage.get(name, 0)
    return budget


def every_budget_positive(budget: Mapping[str, int]) -> bool:
    return all(amount > 0 for amount in budget.values())
