"""The descheduler's scrape-time metrics: leadership and the freshness of the NodeReports."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from agent.descheduler.metrics import DeschedulerMetrics, NodeReportFreshness
from agent.kube.nodereports import NodeUsageReport

NOW = 1_800_000_000.0


def _report(node: str, observed_time: float | None) -> NodeUsageReport:
    return NodeUsageReport(
        node=node,
        observed_time=observed_time,
        heartbeat_seconds=60.0,
        cpu_cores=0.5,
        memory_bytes=2**30,
        swap_bytes=0,
        cpu_capacity=4.0,
        memory_capacity=16 * 2**30,
        swap_capacity=0,
        cpu_allocatable=None,
        memory_allocatable=None,
        gate_held=False,
        waiting_for=(),
        shutdown="none",
        shutdown_start=None,
        budget_end=None,
        agent_stopped=False,
        pods=(),
    )


def _freshness(reports: list[NodeUsageReport]) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(NodeReportFreshness(lambda: reports, lambda: NOW))
    return registry


@pytest.mark.parametrize(
    ("observed", "fresh", "stale", "max_age"),
    [
        pytest.param([], 0, 0, 0.0, id="no-reports"),
        pytest.param([NOW - 10, NOW - 180], 2, 0, 180.0, id="three-heartbeats-is-fresh"),
        pytest.param([NOW - 10, NOW - 600], 1, 1, 600.0, id="older-is-stale"),
        pytest.param([NOW - 10, None], 1, 1, 10.0, id="never-observed-is-stale-without-age"),
    ],
)
def test_reports_are_counted_by_freshness_with_the_oldest_age(
    observed: list[float | None], fresh: int, stale: int, max_age: float
) -> None:
    """Reports older than three heartbeats (or never observed) count as stale, the others as
    fresh, and the oldest observed report's age is exported."""
    registry = _freshness([_report(f"n{i}", when) for i, when in enumerate(observed)])
    name = "kubelet_companion_descheduler_nodereports"
    assert registry.get_sample_value(name, {"state": "fresh"}) == fresh
    assert registry.get_sample_value(name, {"state": "stale"}) == stale
    assert (
        registry.get_sample_value("kubelet_companion_descheduler_nodereport_max_age_seconds")
        == max_age
    )


def test_freshness_is_read_at_every_scrape() -> None:
    """A report that ages past three heartbeats between two scrapes turns stale in the
    second, without any cycle running."""
    now = [NOW]
    reports = [_report("n1", NOW - 100)]
    registry = CollectorRegistry()
    registry.register(NodeReportFreshness(lambda: reports, lambda: now[0]))
    name = "kubelet_companion_descheduler_nodereports"
    assert registry.get_sample_value(name, {"state": "stale"}) == 0
    now[0] += 100
    assert registry.get_sample_value(name, {"state": "stale"}) == 1


def test_the_leader_gauge_follows_leadership_at_scrape_time() -> None:
    """``kubelet_companion_descheduler_leader`` is 1 while the callback says this replica
    leads and 0 once it does not."""
    registry = CollectorRegistry()
    metrics = DeschedulerMetrics(registry)
    leading = [True]
    metrics.follow_leadership(lambda: leading[0])
    assert registry.get_sample_value("kubelet_companion_descheduler_leader") == 1
    leading[0] = False
    assert registry.get_sample_value("kubelet_companion_descheduler_leader") == 0
