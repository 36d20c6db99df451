"""The report's pure core: node counters smoothed (EWMA) into usage, the write policy."""

from __future__ import annotations

import pytest

from agent.node.nodeusage import NodeCounters
from agent.node.podusage import PodScan
from agent.report.policy import Observed, Published, WritePolicy, WriteReason
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


POLICY = WritePolicy(threshold=0.05, heartbeat=60.0, jitter=0.1)
LAST = Published(cpu_fraction=0.30, memory_fraction=0.50, state="s", at=0.0, next_heartbeat=57.0)


@pytest.mark.parametrize(
    ("observed", "at", "expected"),
    [
        pytest.param(Observed(0.32, 0.51, "s"), 10.0, None, id="noise"),
        pytest.param(Observed(0.35, 0.50, "s"), 10.0, WriteReason.THRESHOLD, id="cpu-moved-5pp"),
        pytest.param(Observed(0.30, 0.44, "s"), 10.0, WriteReason.THRESHOLD, id="memory-fell"),
        pytest.param(Observed(0.30, 0.50, "t"), 10.0, WriteReason.STATE, id="state-change"),
        pytest.param(Observed(0.30, 0.50, "s"), 57.0, WriteReason.HEARTBEAT, id="heartbeat"),
    ],
)
def test_write_policy(observed: Observed, at: float, expected: WriteReason | None) -> None:
    """Small noise is not written; a threshold move, a state change or a heartbeat is."""
    assert POLICY.decide(LAST, observed, at) is expected


def test_heartbeat_jitter_spreads_around_the_period_and_keeps_its_mean() -> None:
    """Jitter spreads heartbeats over period*(1 ± jitter/2): agents drift apart, yet the
    mean interval is the period, so a fleet writes no more often than one per period."""
    assert POLICY.next_heartbeat(100.0, 0.0) == pytest.approx(157.0)
    assert POLICY.next_heartbeat(100.0, 0.5) == pytest.approx(160.0)
    assert POLICY.next_heartbeat(100.0, 1.0) == pytest.approx(163.0)
