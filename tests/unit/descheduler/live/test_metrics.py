"""The descheduler's scrape-time metrics: leadership, and the objects a cache skipped."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from agent.descheduler.live.metrics import DeschedulerMetrics, DroppedEvents, SkippedObjects

NOW = 1_800_000_000.0


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


def test_skipped_objects_are_counted_by_cache_at_scrape_time() -> None:
    """Objects a cache could not project are exported per cache, as the counters stand."""
    counts = {"descheduler-pods": 0}
    registry = CollectorRegistry()
    registry.register(SkippedObjects(lambda: counts))
    name = "kubelet_companion_descheduler_objects_skipped_total"
    assert registry.get_sample_value(name, {"cache": "descheduler-pods"}) == 0
    counts["descheduler-pods"] = 2
    assert registry.get_sample_value(name, {"cache": "descheduler-pods"}) == 2


def test_dropped_events_are_counted_at_scrape_time() -> None:
    """Events the broadcaster dropped (its queue full) are exported as the counter stands."""
    dropped = [0]
    registry = CollectorRegistry()
    registry.register(DroppedEvents(lambda: dropped[0]))
    name = "kubelet_companion_descheduler_events_dropped_total"
    assert registry.get_sample_value(name) == 0
    dropped[0] = 7
    assert registry.get_sample_value(name) == 7
