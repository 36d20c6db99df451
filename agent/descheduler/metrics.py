"""The descheduler's metrics, under upstream's names, on its own registry and address.

Dashboards and alerts written for upstream keep working: ``descheduler_pods_evicted_total``
(``result`` is ``success``, ``error``, or why the eviction was not made), the loop and
per-strategy durations, and ``descheduler_build_info``. Ours carry the product prefix.
"""

from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from agent import __version__

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_BLOCKED_BY_PDB = "blocked by PodDisruptionBudget"
RESULT_NOT_FOUND = "pod not found"

_DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class DeschedulerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.pods_evicted = Counter(
            "descheduler_pods_evicted",
            "Number of evicted pods, by the result of the eviction.",
            ["result", "strategy", "profile", "namespace", "node"],
            registry=registry,
        )
        self.loop_duration = Histogram(
            "descheduler_loop_duration_seconds",
            "Time taken to complete a full descheduling cycle.",
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.strategy_duration = Histogram(
            "descheduler_strategy_duration_seconds",
            "Time taken to complete each strategy of a descheduling cycle.",
            ["strategy", "profile"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.build_info = Gauge(
            "descheduler_build_info",
            "Build information of the descheduler (kubelet-companion's version).",
            ["version", "python_version"],
            registry=registry,
        )
        self.build_info.labels(__version__, platform.python_version()).set(1)
        self.usage_fallback = Counter(
            "kubelet_companion_descheduler_usage_fallback",
            "Nodes whose real usage report was missing or stale, so their requests were used.",
            ["reason"],
            registry=registry,
        )
        self.churn_guard_owners = Gauge(
            "kubelet_companion_descheduler_churn_guard_owners",
            "Owners the churn guard remembers as having lost a pod to us (its memory's size).",
            registry=registry,
        )
        self.cycles = Counter(
            "kubelet_companion_descheduler_cycles",
            "Descheduling cycles, by outcome (planned, skipped, dry-run, follower).",
            ["outcome"],
            registry=registry,
        )

    def evicted(
        self, result: str, *, strategy: str, profile: str, namespace: str, node: str
    ) -> None:
        self.pods_evicted.labels(result, strategy, profile, namespace, node).inc()
