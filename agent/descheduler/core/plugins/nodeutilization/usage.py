"""Where a utilization plugin's node and pod usage come from (upstream's ``usageClient``s).

Read from the cycle's snapshot, never called: the runtime read the source the policy names
before the cycle (``model.metricsusage``).

- **requests** (no ``metricsUtilization``): the sum of the pods' requests, Succeeded and
  Failed pods left out, ``pods`` their count.
- **KubernetesMetrics** (``metricsServer: true`` or ``source: KubernetesMetrics``): a node's
  ``cpu`` and ``memory`` from metrics.k8s.io's NodeMetrics, smoothed as upstream's collector
  smooths them; ``pods`` the pod count; a pod's usage from its PodMetrics (the containers'
  sum). As upstream: a Ready node without a sample fails the plugin ("unable to find node …
  in the collected metrics"), and a pod without metrics is skipped. When metrics.k8s.io is
  not served at all, the agents' NodeReports stand in, node by node, and the plan says so
  (``fallback: metrics-api-absent``).
- **Prometheus**: upstream's single ``query``: usage of ``MetricResource`` is
  ``int(sample * 100)`` of a capacity of 100, and there is no pod usage, so at most one pod
  goes per over-utilized node per cycle (``evictionLimits.node`` pods when set, as upstream);
  a node without a sample fails the plugin ("unable to find metric entry for …"). Ours,
  ``queries``: each resource's usage is its ratio times the node's allocatable, and with
  ``podUsage: NodeReports`` pods are weighed by their agents' figures where fresh.
- **NodeReports** (ours): the agents' figures, settled against the snapshot (the pods gone
  since the report taken off, the ones started since added at their requests:
  ``sincereport``); a node whose report is missing or stale falls back to requests
  (``fallback``); a pod absent from its node's report counts its requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.descheduler.core.errors import DeschedulerError
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.plugins.nodeutilization.metrics import (
    KUBERNETES_METRICS,
    NODE_REPORTS,
    PROMETHEUS,
    MetricsUtilization,
)
from agent.descheduler.core.plugins.nodeutilization.sincereport import settle
from agent.descheduler.model.cluster import CPU, MEMORY, PODS, NodeInfo, NodeUsage, PodInfo
from agent.descheduler.model.metricsusage import METRIC_RESOURCE, KubernetesMetrics
from agent.kubesemantics.wellknown import FINISHED_PHASES

REQUESTS = "requests"
METRICS_API_ABSENT = "metrics-api-absent"
"""The ``fallback`` of a node read from NodeReports because metrics.k8s.io is not served."""
METRIC_CAPACITY = 100
"""A node's "allocatable" ``MetricResource``, as upstream's ``referencedResourceListFor…``."""

Usage = dict[str, int]


class UsageUnavailable(DeschedulerError):
    """The source the plugin reads has nothing usable for this cycle (upstream's "error
    getting node usage"): the plugin fails, and with it the cycle's outcome."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"error getting node usage: {reason}")


@dataclass
class NodeState:
    """One node's usage during the plugin's run (upstream's ``NodeInfo``)."""

    node: NodeInfo
    pods: list[PodInfo]
    usage: Usage
    percent: dict[str, float] = field(default_factory=dict)
    available: Usage = field(default_factory=dict)
    source: str = REQUESTS
    """Where the node's usage came from: ``requests``, ``KubernetesMetrics``, ``Prometheus``
    or ``NodeReports`` (the plan's ``usageSource``)."""
    fallback: str = ""
    """Why the source asked for was not the one read (``missing``, ``stale``,
    ``metrics-api-absent``); empty when it was."""
    pods_by: str = REQUESTS
    """Where the pods' usage comes from: ``requests``, ``KubernetesMetrics``, ``NodeReports``,
    or ``""`` (none: a Prometheus node signal, one eviction per node)."""
    since_report: dict[str, int] = field(default_factory=dict)
    """What the snapshot changed in the node's reported usage (``Settled.facts``): the
    plan's ``sinceReport``; empty when nothing or not read from a report."""


def resource_names(
    thresholds: Mapping[str, float], metrics: MetricsUtilization | None
) -> list[str]:
    """The resources tracked: the thresholds', plus cpu, memory and pods unless the usage is
    a Prometheus node signal (``uniquifyResourceNames``, skipped for Prometheus as upstream)."""
    if metrics is not None and metrics.kind == PROMETHEUS:
        return sorted(thresholds)
    return sorted({*thresholds, CPU, MEMORY, PODS})


class UsageSource:
    """Node and pod usage from the source ``metrics`` names (requests without one)."""

    def __init__(
        self, handle: Handle, names: Sequence[str], metrics: MetricsUtilization | None
    ) -> None:
        self.handle = handle
        self.names = list(names)
        self.kind = metrics.kind if metrics is not None else REQUESTS
        self.queries = metrics.queries() if metrics is not None else {}
        self.pod_usage_by_reports = metrics is not None and metrics.pod_usage == NODE_REPORTS

    def check(self, nodes: Sequence[NodeInfo]) -> None:
        """Upstream's ``sync``: the source has a figure for every node of the cycle, or the
        plugin fails before it classifies any."""
        snapshot = self.handle.snapshot
        if self.kind == PROMETHEUS:
            for query in self.queries.values():
                samples = snapshot.prometheus.get(query)
                if samples is None:
                    raise UsageUnavailable(f"prometheus query {query!r} was not run")
                if samples.error:
                    raise UsageUnavailable(samples.error)
                for node in nodes:
                    if node.name not in samples.ratios:
                        raise UsageUnavailable(f"unable to find metric entry for {node.name}")
        elif self.kind == KUBERNETES_METRICS:
            metrics = self._kubernetes_metrics()
            if metrics.served:
                if metrics.error:
                    raise UsageUnavailable(metrics.error)
                for node in nodes:
                    if node.name not in metrics.nodes:
                        raise UsageUnavailable(
                            f'unable to find node "{node.name}" in the collected metrics'
                        )

    def _kubernetes_metrics(self) -> KubernetesMetrics:
        metrics = self.handle.snapshot.kubernetes_metrics
        if metrics is None:
            raise UsageUnavailable("metrics.k8s.io was not read")
        return metrics

    def node_state(self, node: NodeInfo) -> NodeState:
        pods = [
            p for p in self.handle.snapshot.pods_on(node.name) if p.phase not in FINISHED_PHASES
        ]
        usage: Usage = dict.fromkeys(self.names, 0)
        for pod in pods:
            for name in self.names:
                if name != PODS:
                    usage[name] += pod.requests.get(name, 0)
        if PODS in usage:
            usage[PODS] = len(pods)
        state = NodeState(node=node, pods=pods, usage=usage)
        if self.kind == PROMETHEUS:
            self._from_prometheus(state)
        elif self.kind == KUBERNETES_METRICS:
            metrics = self._kubernetes_metrics()
            if metrics.served:
                _read(state, metrics.nodes[node.name], KUBERNETES_METRICS)
                state.pods_by = KUBERNETES_METRICS
            else:
                self._from_reports(state)
                state.fallback = state.fallback or METRICS_API_ABSENT
        elif self.kind == NODE_REPORTS:
            self._from_reports(state)
        return state

    def _from_prometheus(self, state: NodeState) -> None:
        state.source = PROMETHEUS
        state.pods_by = ""
        allocatable = state.node.allocatable
        for name, query in self.queries.items():
            ratio = self.handle.snapshot.prometheus[query].ratios[state.node.name]
            if name == METRIC_RESOURCE:
                state.usage[name] = int(ratio * 100)  # upstream's int64(sample.Value*100)
            else:
                state.usage[name] = int(ratio * allocatable.get(name, 0))
        if self.pod_usage_by_reports and self._fresh_report(state.node.name) is not None:
            state.pods_by = NODE_REPORTS

    def _fresh_report(self, node: str) -> NodeUsage | None:
        report = self.handle.snapshot.node_usage.get(node)
        return None if report is None or report.stale else report

    def _from_reports(self, state: NodeState) -> None:
        report = self.handle.snapshot.node_usage.get(state.node.name)
        if report is None or report.stale:
            state.fallback = "missing" if report is None else "stale"
            return
        settled = settle(report, [pod for pod in state.pods if not pod.deleting])
        _read(state, settled.usage, NODE_REPORTS)
        state.pods_by = NODE_REPORTS
        state.since_report = settled.facts()

    def capacity(self, node: NodeInfo) -> Mapping[str, int]:
        """What usage is a percentage of: allocatable, and 100 of ``MetricResource``."""
        if METRIC_RESOURCE in self.names:
            return {**node.allocatable, METRIC_RESOURCE: METRIC_CAPACITY}
        return node.allocatable

    def pod_problem(self, pod: PodInfo, state: NodeState) -> str:
        """Why the pod's usage cannot be known, so it is skipped (upstream logs "unable to
        get pod usage" and goes on); empty when it can."""
        if state.pods_by != KUBERNETES_METRICS:
            return ""
        metrics = self._kubernetes_metrics()
        if metrics.pods_error:
            raise UsageUnavailable(f"unable to get pod usage: {metrics.pods_error}")
        if pod.key in metrics.pod_problems:
            return f"pod {pod.key}: {metrics.pod_problems[pod.key]}"
        if pod.key not in metrics.pods:
            return f'unable to get podmetrics for "{pod.namespace}"/"{pod.name}": not found'
        return ""

    def pod_usage(self, pod: PodInfo, state: NodeState) -> Usage | None:
        """The pod's usage in the tracked resources; ``None`` when the source has none (a
        Prometheus node signal): the eviction is then not weighed, as upstream's
        ``unconstrainedResourceEviction``."""
        if not state.pods_by:
            return None
        usage = {name: pod.requests.get(name, 0) for name in self.names}
        if PODS in usage:
            usage[PODS] = 1
        measured: Mapping[str, int] | None = None
        if state.pods_by == KUBERNETES_METRICS:
            metrics = self._kubernetes_metrics()
            measured = metrics.pods.get(pod.key, {})
        elif state.pods_by == NODE_REPORTS:
            report = self.handle.snapshot.node_usage[state.node.name]
            measured = report.pod_usage.get(pod.uid)
        if measured is not None:
            for name in (CPU, MEMORY):
                if name in usage and name in measured:
                    usage[name] = measured[name]
        return usage


def _read(state: NodeState, figures: Mapping[str, int], source: str) -> None:
    state.source = source
    for name in (CPU, MEMORY):
        if name in state.usage and name in figures:
            state.usage[name] = figures[name]
