"""HighNodeUtilization (Balance): empty the under-utilized nodes onto the others, so that
``MostAllocated`` scoring can pack them (upstream ``highnodeutilization.go``).

Only ``thresholds``; the high side is 100 %. Under-utilized nodes (every listed resource at
or below its threshold) are the sources, in ascending raw usage; every other schedulable node
is a destination, with its whole free capacity as room. Pods go in eviction order while the
destinations' free capacity stays positive for every resource. ``evictionModes:
[OnlyThresholdingResources]`` limits the candidates to pods requesting a thresholds' resource.

Ours, on by default (``taintSourceNodes: false`` turns it off): every node the plan evicts
from is asked for the soft taint ``kubelet-companion.io/emptying:PreferNoSchedule`` before
its pods go. The default scheduler weighs taint toleration (3) above topology spreading (2)
and resource packing (1); without the taint, the spreading score sends a replacement to a
half-emptied node that holds none of its Deployment yet, the very node it left among them,
and the node stays. The live loop removes the taint once the replacements are bound
(``live.emptying``); the cluster-autoscaler steers pods off its scale-down candidates the
same way.
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
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.metricsusage import METRIC_RESOURCE
from agent.descheduler.plan.shape import TaintChange
from agent.kubesemantics.taintownership import emptying_taint

ONLY_THRESHOLDING_RESOURCES = "OnlyThresholdingResources"


@dataclass(frozen=True)
class HighNodeUtilizationArgs:
    thresholds: Mapping[str, float] = setting(factory=dict)
    number_of_nodes: int = setting(0, minimum=0)
    evictable_namespaces: Namespaces | None = setting(None)
    eviction_modes: tuple[Literal["OnlyThresholdingResources"], ...] = setting(factory=tuple)
    metrics_utilization: MetricsUtilization | None = setting(None)
    source_node_order: Literal["RawSum", "Percentage"] = setting("RawSum")
    cooldown_seconds: float = setting(0.0, minimum=0)
    taint_source_nodes: bool = setting(True)

    def validate(self) -> list[FieldError]:
        errors = include_is_unsupported(self.evictable_namespaces)
        errors += threshold_errors(self.thresholds, "thresholds")
        if errors:
            return errors
        errors = resource_errors(self.metrics_utilization, self.thresholds, "thresholds")
        if (
            ONLY_THRESHOLDING_RESOURCES in self.eviction_modes
            and METRIC_RESOURCE in self.thresholds
        ):
            errors.append(
                FieldError(
                    "evictionModes",
                    f"{ONLY_THRESHOLDING_RESOURCES} would evict nothing: no pod requests "
                    f"{METRIC_RESOURCE}",
                )
            )
        return errors


class HighNodeUtilization:
    name = "HighNodeUtilization"

    def __init__(self, args: HighNodeUtilizationArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.names = resource_names(args.thresholds, args.metrics_utilization)
        self.high = dict.fromkeys(args.thresholds, 100.0)
        self.usage_source = UsageSource(handle, self.names, args.metrics_utilization)

    def _candidate(self, pod: PodInfo) -> bool:
        if not self.handle.evictor.filter(pod):
            return False
        if ONLY_THRESHOLDING_RESOURCES in self.args.eviction_modes:
            return any(name in pod.requests for name in self.args.thresholds)
        return True

    def classify(self, nodes: Sequence[NodeInfo]) -> tuple[list[NodeState], list[NodeState]]:
        self.usage_source.check(nodes)
        under: list[NodeState] = []
        destinations: list[NodeState] = []
        for node in nodes:
            state = self.usage_source.node_state(node)
            capacity = self.usage_source.capacity(node)
            state.percent = percentages(state.usage, capacity)
            state.available = room_up_to(capacity, self.high, self.names)
            if below(state.percent, self.args.thresholds):
                under.append(state)
                record(self.handle, self.name, state, UNDER)
            elif not node.unschedulable and usable_as_room(self.handle, node):
                destinations.append(state)
                record(self.handle, self.name, state, OVER)
            else:
                record(self.handle, self.name, state, APPROPRIATE)
        return under, destinations

    def balance(self, nodes: Sequence[NodeInfo]) -> None:
        under, destinations = self.classify(nodes)
        if not under or len(under) <= self.args.number_of_nodes or len(under) == len(nodes):
            return
        if not destinations:
            return
        excluded = self.args.evictable_namespaces.exclude if self.args.evictable_namespaces else ()
        run = EvictionRun(
            handle=self.handle,
            plugin=self.name,
            usage_source=self.usage_source,
            budget=budget_over(destinations, self.names),
            destinations=destinations,
            keep_going=_room_left,
            pod_filter=self._candidate,
            excluded_namespaces=frozenset(excluded),
            cooldown_seconds=self.args.cooldown_seconds,
        )
        run.run(
            order_sources(
                under,
                ascending=True,
                order=self.args.source_node_order,
                names=list(self.args.thresholds),
            )
        )
        if self.args.taint_source_nodes:
            for node in run.emptied:
                self.handle.record_taint(emptying_change(node, self.name, self.handle.profile))


def emptying_change(node: str, plugin: str, profile: str) -> TaintChange:
    """The soft taint on a node being emptied (the live loop applies a plan's taints first)."""
    return TaintChange.of(
        emptying_taint(),
        node,
        add=True,
        plugin=plugin,
        profile=profile,
        reason="emptying an under-utilized node: its pods' replacements are steered elsewhere",
    )


def _room_left(_state: NodeState, budget: Mapping[str, int]) -> bool:
    return every_budget_positive(budget)
