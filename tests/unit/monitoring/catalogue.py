"""The series each component really exports, with their label names, from its own registry.

Each registry is built the way the entrypoints build it (``new_registry`` plus every
capability's metrics), and the collectors that only speak once they have data are fed some
(a swap audit, a lifted readiness gate). Labelled client-library metrics have no series until
first used, so their declared label names are read from the metric object.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from agent.descheduler.cache.usage import Verdicts
from agent.descheduler.live.metrics import DeschedulerMetrics, DroppedEvents, SkippedObjects
from agent.descheduler.live.reporttrust import NodeReportTrustMetrics
from agent.node.facts import collect_node_facts
from agent.node.metrics import NodeFactsCollector
from agent.node.paths import HostPaths
from agent.readiness.metrics import ReadinessMetrics
from agent.report.metrics import ReportMetrics
from agent.shutdown.metrics import ShutdownMetrics
from agent.swap.collector import AuditStats, SwapAuditCollector
from agent.telemetry.metrics import new_registry
from tests.unit.swap.test_collector import report_with

Catalogue = dict[str, frozenset[str]]
"""Exposed series name (``_total``, ``_bucket`` ... included) -> its label names."""

SERIES_SUFFIXES = {
    "counter": (("_total", ()), ("_created", ())),
    "gauge": (("", ()),),
    "histogram": (("_bucket", ("le",)), ("_sum", ()), ("_count", ()), ("_created", ())),
    "summary": (("", ("quantile",)), ("_sum", ()), ("_count", ()), ("_created", ())),
    "info": (("_info", ()),),
}


def _declared(holders: Iterable[object]) -> Catalogue:
    series: Catalogue = {}
    for holder in holders:
        for metric in vars(holder).values():
            if not isinstance(metric, MetricWrapperBase):
                continue
            (family,) = metric.describe()
            # prometheus_client keeps the declared label names here; there is no public
            # accessor, and a labelled metric has no samples to read them from until used.
            declared = tuple(metric._labelnames)
            for suffix, extra in SERIES_SUFFIXES[family.type]:
                series[family.name + suffix] = frozenset((*declared, *extra))
    return series


def _collected(registry: CollectorRegistry) -> Catalogue:
    series: dict[str, set[str]] = {}
    for family in registry.collect():
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return {name: frozenset(labels) for name, labels in series.items()}


def agent() -> Catalogue:
    """The node agent's registry, with every capability's metrics in it."""
    registry = new_registry("agent")
    registry.register(NodeFactsCollector(HostPaths(), collect_node_facts(HostPaths())))
    audit = report_with(("a", 1, 268435456))
    registry.register(SwapAuditCollector(lambda: audit, AuditStats))
    readiness = ReadinessMetrics(registry)
    readiness.set_wait(12.0)
    holders = [ShutdownMetrics(registry), readiness, ReportMetrics(registry)]
    return _collected(registry) | _declared(holders)


def descheduler() -> Catalogue:
    """The descheduler's registry as ``run_descheduler`` builds it."""
    registry = new_registry("descheduler")
    metrics = DeschedulerMetrics(registry)
    metrics.follow_leadership(lambda: True)
    registry.register(NodeReportTrustMetrics(Verdicts, time.time))
    registry.register(SkippedObjects(lambda: {"descheduler-pods": 0}))
    registry.register(DroppedEvents(lambda: 0))
    return _collected(registry) | _declared([metrics])
