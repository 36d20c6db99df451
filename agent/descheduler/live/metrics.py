"""The descheduler's metrics, under upstream's names, on its own registry and address.

Dashboards and alerts written for upstream keep working: ``descheduler_pods_evicted_total``
(``result`` is ``success``, ``error``, or why the eviction was not made), the loop and
per-strategy durations, and ``descheduler_build_info``. Ours carry the product prefix.

Some are read at scrape time, so every replica, leader or not, says what is true now: whether
this replica leads (an alert fires when no replica does) here, and how the agents' NodeReports
are judged (``reporttrust``: fresh, stale, distrusted; an alert fires on stale ones).
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from agent import __version__

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_BLOCKED_BY_PDB = "blocked by PodDisruptionBudget"
RESULT_BLOCKED_BY_IMPLICIT_BUDGET = "blocked by implicit budget"
"""Ours: held by its workload's implicit budget (no PDB selects the pod) until the cycle
ended: its replacements did not turn Ready in time."""
RESULT_NOT_FOUND = "pod not found"
RESULT_NODE_BELOW_TARGET = "node no longer above target"
"""Ours: a held LowNodeUtilization eviction dropped when released, its node being below its
target by then (``plan.shape.NodeTarget``); never sent, left to the next cycle."""

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
        self.usage_source_errors = Counter(
            "kubelet_companion_descheduler_usage_source_errors",
            "Reads of a metrics source that gave no usage (a Prometheus query, a NodeMetrics "
            "sample, a PodMetrics list), by source; the plugins that needed it fail their "
            "cycle.",
            ["source"],
            registry=registry,
        )
        self.churn_guard_owners = Gauge(
            "kubelet_companion_descheduler_churn_guard_owners",
            "Owners the churn guard remembers as having lost a pod to us (its memory's size).",
            registry=registry,
        )
        self.cycles = Counter(
            "kubelet_companion_descheduler_cycles",
            "Descheduling cycles, by outcome (planned, skipped, failed: a plugin or profile "
            "failed and the rest of the plan went ahead, dry-run, follower).",
            ["outcome"],
            registry=registry,
        )
        self.leader = Gauge(
            "kubelet_companion_descheduler_leader",
            "1 while this replica may plan and evict: it holds the leader Lease, or runs "
            "without leader election; else 0.",
            registry=registry,
        )

        self.unrecorded_taint_marks = Gauge(
            "kubelet_companion_descheduler_unrecorded_taint_marks",
            "Nodes carrying one of our taint-ownership annotations that our record on the "
            "Lease does not hold (written by someone else, or left by a version before the "
            "record): ignored, by annotation; set each cycle.",
            ["annotation"],
            registry=registry,
        )

    def follow_leadership(self, leading: Callable[[], bool]) -> None:
        """Read ``leading`` at every scrape (a bool read; safe from the HTTP threads)."""
        self.leader.set_function(lambda: float(leading()))

    def evicted(
        self, result: str, *, strategy: str, profile: str, namespace: str, node: str
    ) -> None:
        self.pods_evicted.labels(result, strategy, profile, namespace, node).inc()


class SkippedObjects(Collector):
    """``kubelet_companion_descheduler_objects_skipped_total{cache}``: objects a cache left
    out because they could not be projected (a quantity or timestamp the API server would
    not have stored, JSON nested too deep). Read at scrape time from the caches' counters
    (ints, written on the watch threads; a read sees the old value or the new one)."""

    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self._counts = counts

    def describe(self) -> Iterator[CounterMetricFamily]:
        return self._families({})

    def collect(self) -> Iterator[CounterMetricFamily]:
        return self._families(self._counts())

    @staticmethod
    def _families(counts: Mapping[str, int]) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "kubelet_companion_descheduler_objects_skipped",
            "Objects a cache left out because they could not be projected, by cache.",
            labels=["cache"],
        )
        for cache, count in sorted(counts.items()):
            family.add_metric([cache], count)
        yield family


class DroppedEvents(Collector):
    """``kubelet_companion_descheduler_events_dropped_total``: Events the broadcaster dropped
    because its queue was full (evictions never wait for Events). Read at scrape time from
    the broadcaster's counter (an int written on the event loop)."""

    def __init__(self, dropped: Callable[[], int]) -> None:
        self._dropped = dropped

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield self._family(0)

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield self._family(self._dropped())

    @staticmethod
    def _family(value: int) -> CounterMetricFamily:
        return CounterMetricFamily(
            "kubelet_companion_descheduler_events_dropped",
            "Events dropped because the Event queue was full.",
            value=value,
        )
