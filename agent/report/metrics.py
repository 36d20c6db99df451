"""The report writer's metrics: what was written, why, and what failed."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class ReportMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.writes = Counter(
            "kubelet_companion_report_writes",
            "NodeReport status writes by reason (first, state, threshold, pod, heartbeat, "
            "retry, stop) and result (success, error).",
            ["reason", "result"],
            registry=registry,
        )
        self.size = Gauge(
            "kubelet_companion_report_size_bytes",
            "Bytes of the last NodeReport status patch sent.",
            registry=registry,
        )
        self.last_write = Gauge(
            "kubelet_companion_report_last_write_timestamp_seconds",
            "Unix time of the last successful NodeReport write.",
            registry=registry,
        )
