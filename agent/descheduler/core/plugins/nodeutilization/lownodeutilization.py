"""LowNodeUtilization (Balance): move pods off over-utilized nodes while under-utilized nodes
have room (upstream ``lownodeutilization.go``).

Nodes are classified on the thresholds' resources: under-utilized when every one is at or
below ``thresholds`` and the node is schedulable; over-utilized when any is above
``targetThresholds``; else appropriately utilized. With ``useDeviationThresholds`` the limits
are the mean usage minus/plus the thresholds, clamped to [0, 100]. The plugin stops early
when no node is under-utilized, when their count is at most ``numberOfNodes``, when every
node is, or when none is over-utilized. The budget is, per resource (cpu, memory and pods
always), the under-utilized nodes' room up to ``targetThresholds`` minus their usage; a source
node is drained in eviction order while it is above target on any resource and every budget
resource is still positive. See ``common`` for where we differ on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.framework.args import Namespaces, threshold_errors
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.plugins.nodeutilization.common import (
    APPROPRIATE,
    OVER,
    UNDER,
    EvictionRun,
    PluginEvictionLimits,
    above,
    below,
    budget_over,
    every_budget_positive,
    include_is_unsupported,
    order_sources,
    percentages,
    record,
    room_up_to,
    usable_as_room,
)
from agent.descheduler.core.plugins.nodeutilization.metrics import (
    MetricsUtilization,
    resource_errors,
)
from agent.descheduler.core.plugins.nodeutilization.usage import (
    NodeState,
    UsageSource,
    resource_names,
)
from agent.descheduler.model.cluster import NodeInfo
from agent.descheduler.plan.shape import above_target


@dataclass(frozen=True)
class LowNodeUtilizationArgs:
    thresholds: Mapping[str, float] = setting(factory=dict)
    target_thresholds: Mapping[str, float] = setting(factory=dict)
    use_deviation_thresholds: bool = setting(False)
    number_of_nodes: int = setting(0, minimum=0)
    evictable_namespaces: Namespaces | None = setting(None)
    metrics_utilization: MetricsUtilization | None = setting(None)
    eviction_limits: PluginEvictionLimits | None = setting(None)
    source_node_order: Literal["RawSum", "Percentage"] = setting("RawSum")
    """Ours: ``RawSum`` is upstream's order (memory dominates); ``Percentage`` is opt-in."""
    cooldown_seconds: float = setting(0.0, minimum=0)
    """Ours: the churn guard, off (0) by default so decisions stay upstream's."""

    def validate(self) -> list[FieldError]:
        errors = include_is_unsupported(self.evictable_namespaces)
        errors += threshold_errors(self.thresholds, "thresholds")
        errors += threshold_errors(self.target_thresholds, "targetThresholds")
        if errors:
            return errors
        errors += resource_errors(self.metrics_utilization, self.thresholds, "thresholds")
        errors += resource_errors(
            self.metrics_utilization, self.target_thresholds, "targetThresholds"
        )
        if errors:
            return errors
        if set(self.thresholds) != set(self.target_thresholds):
            return [
                FieldError(
                    "targetThresholds",
                    "thresholds and targetThresholds configured different resources",
                )
            ]
        if not self.use_deviation_thresholds:
            errors += [
                FieldError(
                    f"thresholds.{name}",
                    f"thresholds' {name} percentage is greater than targetThresholds'",
                )
                for name, value in sorted(self.thresholds.items())
                if value > self.target_thresholds[name]
            ]
        return errors


def _clamp(values: Mapping[str, float]) -> dict[str, float]:
    return {name: min(max(value, 0.0), 100.0) for name, value in values.items()}


class LowNodeUtilization:
    name = "LowNodeUtilization"

    def __init__(self, args: LowNodeUtilizationArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.names = resource_names(args.thresholds, args.metrics_utilization)
        self.usage_source = UsageSource(handle, self.names, args.metrics_utilization)

    def limits(self, states: Sequence[NodeState]) -> tuple[dict[str, float], dict[str, float]]:
        """The low and high limits, static or by deviation from the mean."""
        if not self.args.use_deviation_thresholds:
            return dict(self.args.thresholds), dict(self.args.target_thresholds)
        listed = list(self.args.thresholds)
        mean = {
            name: sum(s.percent.get(name, 0.0) for s in states) / len(states) if states else 0.0
            for name in listed
        }
        low = _clamp({n: mean[n] - self.args.thresholds[n] for n in listed})
        high = _clamp({n: mean[n] + self.args.target_thresholds[n] for n in listed})
        return low, high

    def classify(
        self, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeState], list[NodeState], list[NodeState]]:
        self.usage_source.check(nodes)
        states = [self.usage_source.node_state(node) for node in nodes]
        for state in states:
            state.percent = percentages(state.usage, self.usage_source.capacity(state.node))
            if self.args.use_deviation_thresholds:
                state.percent = {
                    n: v for n, v in state.percent.items() if n in self.args.thresholds
                }
        low, high = self.limits(states)
        under: list[NodeState] = []
        over: list[NodeState] = []
        rest: list[NodeState] = []
        for state in states:
            schedulable = not state.node.unschedulable and usable_as_room(self.handle, state.node)
            capacity = self.usage_source.capacity(state.node)
            if schedulable and below(state.percent, low):
                state.available = room_up_to(capacity, high, self.names)
                under.append(state)
            elif above(state.percent, high):
                state.available = room_up_to(capacity, high, self.names)
                over.append(state)
            else:
                rest.append(state)
        for group, category in ((under, UNDER), (over, OVER), (rest, APPROPRIATE)):
            for state in group:
                record(self.handle, self.name, state, category)
        return under, over, rest

    def balance(self, nodes: Sequence[NodeInfo]) -> None:
        under, over, _ = self.classify(nodes)
        if not under or len(under) <= self.args.number_of_nodes or len(under) == len(nodes):
            return
        if not over:
            return
        evictor = self.handle.evictor
        excluded = self.args.evictable_namespaces.exclude if self.args.evictable_namespaces else ()
        limits = self.args.eviction_limits
        EvictionRun(
            handle=self.handle,
            plugin=self.name,
            usage_source=self.usage_source,
            budget=budget_over(under, self.names),
            destinations=under,
            keep_going=_above_target_with_budget,
            pod_filter=evictor.filter,
            excluded_namespaces=frozenset(excluded),
            per_node_limit=limits.node if limits else None,
            cooldown_seconds=self.args.cooldown_seconds,
            hold=False,  # see EvictionRun.hold
        ).run(
            order_sources(
                over,
                ascending=False,
                order=self.args.source_node_order,
                names=list(self.args.thresholds),
            )
        )


def _above_target_with_budget(state: NodeState, budget: Mapping[str, int]) -> bool:
    """``isNodeAboveTargetUtilization`` and every budget resource still > 0."""
    if not above_target(state.usage, state.available):
        return False
    return every_budget_positive(budget)
