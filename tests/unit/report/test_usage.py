"""The report's pure core: node counters smoothed (EWMA) into usage."""

from __future__ import annotations

import pytest

from agent.node.nodeusage import NodeCounters
from agent.node.podusage import PodScan
from agent.report.usage import Sample, UsageTracker, ewma


def _node(busy: int, total: int, available: int) -> NodeCounters:
    return NodeCounters(
        cpus=4,
        cpu_busy_ticks=busy,
        cpu_total_ticks=total,
        memory_total=1000,
        memory_available=available,
        swap_total=0,
        swap_free=0,
    )


def test_node_cpu_is_a_rate_and_every_value_is_smoothed() -> None:
    """CPU cores come from the counters' growth; values follow 0.9*prev + 0.1*new."""
    tracker = UsageTracker(weight=0.1)
    empty = PodScan(2, None, {})
    tracker.add(Sample(0, _node(0, 0, 500), empty))
    assert not tracker.ready
    tracker.add(Sample(5, _node(100, 400, 500), empty))  # 25% of 4 cores busy
    assert tracker.node_smoothed is not None
    assert tracker.node_smoothed.cpu_cores == pytest.approx(1.0)
    tracker.add(Sample(10, _node(500, 800, 0), empty))  # 100% busy, memory 1000
    assert tracker.node_latest is not None
    assert tracker.node_latest.cpu_cores == pytest.approx(4.0)
    assert tracker.node_smoothed.cpu_cores == pytest.approx(0.9 * 1.0 + 0.1 * 4.0)
    assert tracker.node_smoothed.memory_working_set == pytest.approx(0.9 * 500 + 0.1 * 1000)
    assert ewma(None, 3.0, 0.1) == 3.0
