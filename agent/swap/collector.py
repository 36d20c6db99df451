"""Per-container swap series, built at scrape time from the latest audit.

A custom collector rather than labelled gauges: a container that is gone is simply not in
the next audit, so its series disappear instead of lingering with a stale value. Names and
labels follow kubelet's ``/metrics/resource`` where kubelet has the metric; the node-level
series (``node_swap_usage_bytes``, ``machine_swap_bytes``, cgroup and noswap facts) come
from ``agent.node.metrics`` and are not repeated here.

``container_swap_limit_bytes`` is ``+Inf`` for a cgroup whose ``memory.swap.max`` is
``max`` (unlimited). ``kubelet_companion_swap_capacity_mismatch`` is 1 while kubelet's swap
capacity (``status.nodeInfo.swap.capacity``) differs from ``SwapTotal``, and enforcement is
held back; ``kubelet_companion_swap_capacity_source_info`` names the capacity the expected
limits were computed from (``kubelet`` or ``meminfo``).

Scrapes run on HTTP threads; they read one immutable report that the controller replaces in
a single assignment, so no lock is needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from agent.swap.audit import AuditReport, DriftState

LABELS = ["container", "pod", "namespace"]


@dataclass(frozen=True)
class AuditStats:
    """Counters and timings kept by the controller across audits."""

    audits: int = 0
    audit_failures: int = 0
    writes: int = 0
    write_failures: int = 0
    last_audit_timestamp: float = 0.0
    last_audit_seconds: float = 0.0
    eviction_warning: bool = False


class SwapAuditCollector(Collector):
    def __init__(
        self, report: Callable[[], AuditReport | None], stats: Callable[[], AuditStats]
    ) -> None:
        self._report = report
        self._stats = stats

    def describe(self) -> Iterable[Metric]:
        return self._families(None, AuditStats())

    def collect(self) -> Iterable[Metric]:
        return self._families(self._report(), self._stats())

    def _families(self, report: AuditReport | None, stats: AuditStats) -> list[Metric]:
        usage = GaugeMetricFamily(
            "container_swap_usage_bytes",
            "Current amount of the container swap usage in bytes. Reported only on non-windows "
            "systems",
            labels=LABELS,
        )
        limit = GaugeMetricFamily(
            "container_swap_limit_bytes",
            "Current amount of the container swap limit in bytes (memory.swap.max; +Inf when "
            "unlimited). Reported only on non-windows systems",
            labels=LABELS,
        )
        expected = GaugeMetricFamily(
            "kubelet_companion_container_swap_limit_expected_bytes",
            "The memory.swap.max kubelet's LimitedSwap rules give the container.",
            labels=LABELS,
        )
        drift = GaugeMetricFamily(
            "kubelet_companion_swap_limit_drift_containers",
            "Containers whose memory.swap.max differs from the expected limit.",
        )
        available = GaugeMetricFamily(
            "kubelet_companion_pods_swap_available_bytes",
            "Swap shared out to pods: capacity minus memorySwap.reservedSwap.",
        )
        unmapped = GaugeMetricFamily(
            "kubelet_companion_swap_unmapped_container_cgroups",
            "Container cgroups under kubepods that no pod on this node claims.",
        )
        mismatch = GaugeMetricFamily(
            "kubelet_companion_swap_capacity_mismatch",
            "1 while kubelet's swap capacity (status.nodeInfo.swap.capacity) differs from "
            "SwapTotal; memorySwap.enforce writes nothing meanwhile.",
        )
        source = InfoMetricFamily(
            "kubelet_companion_swap_capacity_source",
            "The swap capacity expected limits are computed from: kubelet (the Node's "
            "status.nodeInfo.swap.capacity) or meminfo (SwapTotal, when the Node has none).",
        )
        if report is not None:
            for row in report.containers:
                if row.cgroup is None:
                    continue
                labels = [row.container, row.pod, row.namespace]
                if row.state is not DriftState.NOT_COMPARED:  # cgroup v1: kubelet sets none
                    expected.add_metric(labels, row.expected.bytes)
                if row.usage is not None:
                    usage.add_metric(labels, row.usage)
                if row.actual == "max":
                    limit.add_metric(labels, math.inf)
                elif row.actual is not None:
                    limit.add_metric(labels, row.actual)
            drift.add_metric([], len(report.drifted))
            available.add_metric([], report.summary.node.pods_swap_available)
            unmapped.add_metric([], len(report.unmapped))
            mismatch.add_metric([], 1 if report.summary.capacity_mismatch else 0)
            source.add_metric([], {"source": report.summary.capacity_source.value})
        audits = CounterMetricFamily(
            "kubelet_companion_swap_audits",
            "Swap audits run, by result.",
            labels=["result"],
        )
        audits.add_metric(["success"], stats.audits)
        audits.add_metric(["failure"], stats.audit_failures)
        writes = CounterMetricFamily(
            "kubelet_companion_swap_limit_writes",
            "memory.swap.max writes made by enforcement, by result.",
            labels=["result"],
        )
        writes.add_metric(["success"], stats.writes)
        writes.add_metric(["failure"], stats.write_failures)
        last = GaugeMetricFamily(
            "kubelet_companion_swap_audit_last_timestamp_seconds",
            "Unix time of the last successful swap audit.",
            value=stats.last_audit_timestamp,
        )
        duration = GaugeMetricFamily(
            "kubelet_companion_swap_audit_duration_seconds",
            "How long the last swap audit took (cgroup scan and comparison).",
            value=stats.last_audit_seconds,
        )
        eviction = GaugeMetricFamily(
            "kubelet_companion_swap_eviction_threshold_above_min_free",
            "1 when swap is on and kubelet's memory eviction threshold is above "
            "vm.min_free_kbytes (checked only with memorySwap.checkEvictionThreshold).",
            value=1 if stats.eviction_warning else 0,
        )
        return [
            usage,
            limit,
            expected,
            drift,
            available,
            unmapped,
            mismatch,
            source,
            audits,
            writes,
            last,
            duration,
            eviction,
        ]
