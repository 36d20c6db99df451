"""``metricsUtilization``: which source a utilization plugin reads its usage from.

Upstream v0.36's field, read the same way: ``metricsServer: true`` (deprecated) or
``source: KubernetesMetrics`` reads metrics.k8s.io; ``source: Prometheus`` runs
``prometheus.query``, whose samples (one per node, labelled ``instance``, each in [0, 1]) are
the usage of the single resource ``MetricResource``. Upstream's rules are checked when the
policy is loaded, with upstream's words, where upstream checks some only when the plugin is
built, every cycle (``validatePrometheusMetricsUtilization``, "metrics source is empty").

Ours, each opt-in:
- ``source: NodeReports``: the agents' NodeReports;
- ``prometheus.queries: {cpu: …, memory: …}`` instead of ``query`` (upstream descheduler
  #1833): one query per resource, each sample the ratio of the node's allocatable in use, so
  thresholds stay per resource (``cpu``, ``memory``; ``pods`` is counted as usual);
- ``podUsage: NodeReports`` with ``queries``: where a node's agent reports what each pod
  uses, pods are chosen and subtracted by it (biggest real user first among upstream's equal
  keys, as many as the node needs to get under target); elsewhere upstream's single eviction
  per node stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.model.cluster import CPU, MEMORY, PODS
from agent.descheduler.model.metricsusage import METRIC_RESOURCE

KUBERNETES_METRICS = "KubernetesMetrics"
PROMETHEUS = "Prometheus"
NODE_REPORTS = "NodeReports"
KUBERNETES_METRICS_RESOURCES = frozenset({CPU, MEMORY, PODS})
"""What metrics.k8s.io can say of a node (``pods`` by count, as upstream)."""


@dataclass(frozen=True)
class PrometheusQuery:
    query: str = setting("")
    queries: Mapping[str, str] = setting(factory=dict)
    """Ours: resource name -> a query whose samples are that resource's ratio in use."""

    def validate(self) -> list[FieldError]:
        errors = [
            FieldError(f"queries.{name}", reason)
            for name, query in sorted(self.queries.items())
            if (reason := _query_key_problem(name, query))
        ]
        if self.query and self.queries:
            errors.append(FieldError("queries", "set query or queries, not both"))
        return errors


def _query_key_problem(name: str, query: str) -> str:
    if name == METRIC_RESOURCE:
        return f"{METRIC_RESOURCE} is what query reads; queries are per resource (cpu, memory)"
    if name == PODS:
        return "pods are counted, never queried"
    return "" if query.strip() else "must not be empty"


@dataclass(frozen=True)
class MetricsUtilization:
    metrics_server: bool = setting(False)
    source: Literal["", "KubernetesMetrics", "Prometheus", "NodeReports"] = setting("")
    prometheus: PrometheusQuery | None = setting(None)
    pod_usage: Literal["", "NodeReports"] = setting("")
    """Ours: how pods are chosen under a Prometheus node signal (see the module)."""

    def validate(self) -> list[FieldError]:
        """Upstream's ``ValidateLowNodeUtilizationArgs`` rules, then ours."""
        errors = []
        source = self.source
        if source == KUBERNETES_METRICS and self.metrics_server:
            errors.append(
                FieldError(
                    "",
                    f'it is not allowed to set both "{KUBERNETES_METRICS}" source and '
                    "metricsServer",
                )
            )
        if source in (KUBERNETES_METRICS, NODE_REPORTS) and self.prometheus is not None:
            errors.append(
                FieldError(
                    "prometheus",
                    "prometheus configuration is not allowed to set when source is set to "
                    f'"{source}"',
                )
            )
        prometheus = self.prometheus
        if source == PROMETHEUS and (
            prometheus is None or not (prometheus.query or prometheus.queries)
        ):
            errors.append(
                FieldError(
                    "prometheus.query",
                    f'prometheus query is required when metrics source is set to "{PROMETHEUS}"',
                )
            )
        if not source and not self.metrics_server:
            errors.append(
                FieldError(
                    "source",
                    "metrics source is empty: set source (KubernetesMetrics, Prometheus or "
                    "NodeReports) or metricsServer, or leave metricsUtilization out to balance "
                    "on requests (upstream fails every cycle with this)",
                )
            )
        if self.pod_usage and not (source == PROMETHEUS and prometheus and prometheus.queries):
            errors.append(
                FieldError(
                    "podUsage",
                    "only with source Prometheus and prometheus.queries: a pod's usage is "
                    "subtracted in the queries' resources",
                )
            )
        return errors

    @property
    def kind(self) -> str:
        """The source read: ``KubernetesMetrics`` (``metricsServer`` included), ``Prometheus``
        or ``NodeReports``."""
        return KUBERNETES_METRICS if self.metrics_server else self.source

    def queries(self) -> dict[str, str]:
        """Resource -> query, for the Prometheus source (``MetricResource`` for ``query``)."""
        if self.kind != PROMETHEUS or self.prometheus is None:
            return {}
        if self.prometheus.queries:
            return dict(self.prometheus.queries)
        return {METRIC_RESOURCE: self.prometheus.query}


def resource_errors(
    metrics: MetricsUtilization | None, thresholds: Mapping[str, float], key: str
) -> list[FieldError]:
    """The thresholds' resources the source can serve (upstream's
    ``validatePrometheusMetricsUtilization``, checked at load instead of every cycle)."""
    names = sorted(thresholds)
    kind = metrics.kind if metrics is not None else ""
    if (
        kind == PROMETHEUS
        and metrics is not None
        and not metrics.queries().keys() - {METRIC_RESOURCE}
    ):
        if names != [METRIC_RESOURCE]:
            shown = " ".join(names)
            return [
                FieldError(
                    key,
                    f"{key} are expected to specify a single instance of "
                    f'"{METRIC_RESOURCE}" resource, got [{shown}] instead',
                )
            ]
        return []
    if kind == PROMETHEUS and metrics is not None:
        queried = set(metrics.queries())
        return [
            FieldError(f"{key}.{name}", f"no prometheus.queries entry for {name}")
            for name in names
            if name != PODS and name not in queried
        ]
    problems = []
    if METRIC_RESOURCE in thresholds:
        problems.append(
            FieldError(
                f"{key}.{METRIC_RESOURCE}",
                "read from a Prometheus query only (metricsUtilization.source: Prometheus)",
            )
        )
    if kind == KUBERNETES_METRICS:
        problems += [
            FieldError(
                f"{key}.{name}",
                f"metrics.k8s.io reports cpu and memory only (and pods are counted), not {name}",
            )
            for name in names
            if name not in KUBERNETES_METRICS_RESOURCES and name != METRIC_RESOURCE
        ]
    return problems
