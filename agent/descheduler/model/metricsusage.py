"""Usage read from a metrics source (metrics.k8s.io, Prometheus), as one cycle sees it.

Upstream's utilization plugins call their source in the middle of a cycle (a Prometheus
query at the start of ``Balance``, a ``PodMetrics`` Get per candidate pod). Ours plan on a
snapshot and never call anything, so the runtime reads what the policy asks for before the
cycle (or ``descheduler plan --usage`` reads it from a file), ``cache`` turns the answers
into these, and they travel in the ``ClusterSnapshot``. A source that failed travels too, as
its reason: the plugin that needed it then fails with it, and the cycle fails loudly, rather
than balancing on something the policy did not ask for.

Pure data: no I/O, no clocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agent.descheduler.model.values import EMPTY_MAP, ResourceList

METRIC_RESOURCE = "MetricResource"
"""Upstream's resource name for a Prometheus query's value: thresholds name it, a node's
"capacity" of it is 100, and its usage is the sample x 100 (truncated, as upstream's
``int64(sample.Value*100)``)."""


@dataclass(frozen=True, slots=True)
class PrometheusSamples:
    """One Prometheus query's answer, by node: each value a ratio in [0, 1]."""

    query: str
    ratios: Mapping[str, float] = field(default_factory=lambda: EMPTY_MAP)
    """Node name (the sample's ``instance`` label) -> its value."""
    error: str = ""
    """Why the query gave no usable answer (upstream's words where it has them); the plugins
    that read this query fail with it."""


@dataclass(frozen=True, slots=True)
class KubernetesMetrics:
    """What metrics.k8s.io said, as upstream's metrics collector and ``PodMetrics`` read it."""

    served: bool = True
    """Discovery lists ``metrics.k8s.io/v1beta1``. When it does not, the plugins read the
    agents' NodeReports instead, and the plan says so (``fallback``)."""
    nodes: Mapping[str, ResourceList] = field(default_factory=lambda: EMPTY_MAP)
    """Node name -> ``cpu`` millicores and ``memory`` bytes, smoothed as upstream's collector
    smooths them (``cache.metricsserver``)."""
    pods: Mapping[str, ResourceList] = field(default_factory=lambda: EMPTY_MAP)
    """``namespace/name`` -> the sum of its containers' ``cpu`` and ``memory`` (unsmoothed,
    as upstream reads a pod's)."""
    pod_problems: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAP)
    """``namespace/name`` -> why the pod has no usage (a container without ``cpu``)."""
    error: str = ""
    """Why there is no node usage at all (never sampled: the list failed every time)."""
    pods_error: str = ""
    """Why there is no pod usage at all (the cycle's ``PodMetrics`` list failed)."""
