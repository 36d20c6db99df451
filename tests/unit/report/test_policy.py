"""The report's write policy: when a sample is worth a NodeReport write."""

from __future__ import annotations

import pytest

from agent.report.policy import Observed, Published, WritePolicy, WriteReason

POLICY = WritePolicy(threshold=0.05, heartbeat=60.0, jitter=0.1, min_interval=15.0)
PODS = {"a": (0.10, 0.20), "b": (0.02, 0.02)}
LAST = Published(
    cpu_fraction=0.30, memory_fraction=0.50, state="s", at=0.0, next_heartbeat=57.0, pods=PODS
)


def seen(
    cpu: float = 0.30,
    memory: float = 0.50,
    state: str = "s",
    **pods: tuple[float, float] | None,
) -> Observed:
    """The node as sampled; ``pods`` replace (a pair) or remove (``None``) LAST's pods."""
    shares = {**PODS, **pods}
    return Observed(cpu, memory, state, {k: v for k, v in shares.items() if v is not None})


@pytest.mark.parametrize(
    ("observed", "at", "expected"),
    [
        pytest.param(seen(0.32, 0.51), 20.0, None, id="noise"),
        pytest.param(seen(0.35), 20.0, WriteReason.THRESHOLD, id="cpu-moved-5pp"),
        pytest.param(seen(memory=0.44), 20.0, WriteReason.THRESHOLD, id="memory-fell"),
        pytest.param(seen(0.35), 10.0, None, id="node-move-held-within-min-interval"),
        pytest.param(seen(state="t"), 1.0, WriteReason.STATE, id="state-change-never-held"),
        pytest.param(seen(), 57.0, WriteReason.HEARTBEAT, id="heartbeat"),
        pytest.param(seen(a=(0.15, 0.20)), 20.0, WriteReason.POD, id="pod-cpu-moved-5pp"),
        pytest.param(seen(a=(0.10, 0.14)), 20.0, WriteReason.POD, id="pod-memory-fell"),
        pytest.param(seen(a=(0.14, 0.24)), 20.0, None, id="pod-noise"),
        pytest.param(seen(c=(0.05, 0.0)), 20.0, WriteReason.POD, id="pod-came-with-5pp"),
        pytest.param(seen(a=None), 20.0, WriteReason.POD, id="busy-pod-went"),
        pytest.param(seen(b=None), 20.0, None, id="small-pod-went"),
        pytest.param(seen(a=(0.50, 0.20)), 10.0, None, id="pod-move-held-within-min-interval"),
        pytest.param(seen(a=(0.50, 0.20)), 15.0, WriteReason.POD, id="pod-move-at-min-interval"),
    ],
)
def test_write_policy(observed: Observed, at: float, expected: WriteReason | None) -> None:
    """Small noise is not written; a node or pod move of 5 points of capacity is, once the
    minimum interval since the last write has passed; a state change at once; a heartbeat."""
    assert POLICY.decide(LAST, observed, at) is expected


def test_churning_pods_write_at_most_once_per_min_interval() -> None:
    """A pod swinging between idle and 2 of 4 cores at every 5 s sample for 10 minutes
    writes once per 15 s at most (40 times), not once per sample (120): the API write load
    of a churning node is bounded by the minimum interval, not by the sample rate."""
    published = Published(0.0, 0.0, "s", at=0.0, next_heartbeat=60.0, pods={})
    writes = 0
    for sample in range(1, 121):
        now = sample * 5.0
        observed = Observed(0.0, 0.0, "s", {"burst": (0.5 if sample % 2 else 0.0, 0.0)})
        if POLICY.decide(published, observed, now) is not None:
            writes += 1
            published = Published(
                0.0, 0.0, "s", now, POLICY.next_heartbeat(now, 0.5), observed.pods
            )
    assert writes == 40


def test_heartbeat_jitter_spreads_around_the_period_and_keeps_its_mean() -> None:
    """Jitter spreads heartbeats over period*(1 ± jitter/2): agents drift apart, yet the
    mean interval is the period, so a fleet writes no more often than one per period."""
    assert POLICY.next_heartbeat(100.0, 0.0) == pytest.approx(157.0)
    assert POLICY.next_heartbeat(100.0, 0.5) == pytest.approx(160.0)
    assert POLICY.next_heartbeat(100.0, 1.0) == pytest.approx(163.0)
