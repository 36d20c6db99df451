"""The descheduler's metrics, under upstream's names, on its own registry and address.

Dashboards and alerts written for upstream keep working: ``descheduler_pods_evicted_total``
(``result`` is ``success``, ``error``, or why the eviction was not made), the loop and
per-strategy durations, and ``descheduler_build_info``. Ours carry the product prefix.

Two are read at scrape time, so every replica, leader or not, says what is true now: whether
this replica leads (an alert fires when no replica does), and how fresh the agents'
NodeReports are (the reports every replica watches; an alert fires on stale ones).
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agent import __version__
from agent.kube.nodereports import NodeUsageReport

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
        self.leader = Gauge(
            "kubelet_companion_descheduler_leader",
            "1 while this replica may plan and evict: it holds the leader Lease, or runs "
            "without leader election; else 0.",
            registry=registry,
        )

    def follow_leadership(self, leading: Callable[[], bool]) -> None:
        """Read ``leading`` at every scrape (a bool read; safe from the HTTP threads)."""
        self.leader.set_function(lambda: float(leading()))

    def evicted(
        self, result: str, *, strategy: str, profile: str, namespace: str, node: str
    ) -> None:
        self.pods_evicted.labels(result, strategy, profile, namespace, node).inc()


class NodeReportFreshness(Collector):
    """``kubelet_companion_descheduler_nodereports{state}`` (``fresh``/``stale``: older than
    three heartbeats, the age at which the plugins stop believing a report) and the age of
    the oldest report, from the reports the descheduler watches.

    Runs on the HTTP threads: ``reports`` returns a copy of the cache's store (one
    ``list(dict.values())``, which the GIL makes atomic), and the reports are immutable.
    """

    def __init__(
        self, reports: Callable[[], Iterable[NodeUsageReport]], now: Callable[[], float]
    ) -> None:
        self._reports = reports
        self._now = now

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return self._families([], 0.0)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._families(list(self._reports()), self._now())

    @staticmethod
    def _families(reports: list[NodeUsageReport], now: float) -> Iterator[GaugeMetricFamily]:
        stale = sum(1 for report in reports if report.stale(now))
        counts = GaugeMetricFamily(
            "kubelet_companion_descheduler_nodereports",
            "NodeReports the descheduler sees, by state: fresh, or stale (older than three "
            "heartbeats, or never observed; the node's usage falls back to requests).",
            labels=["state"],
        )
        counts.add_metric(["fresh"], len(reports) - stale)
        counts.add_metric(["stale"], stale)
        yield counts
        ages = [
            now - report.observed_time for report in reports if report.observed_time is not None
        ]
        yield GaugeMetricFamily(
            "kubelet_companion_descheduler_nodereport_max_age_seconds",
            "Seconds since the oldest NodeReport was observed by its agent (0 without any).",
            value=max(ages, default=0.0),
        )
