"""The client token bucket: a burst goes at once, then requests are spaced at the QPS."""

import pytest

from agent.kube.ratelimit import TokenBucket


class _Time:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture(name="fake_time")
def _fake_time() -> _Time:
    return _Time()


async def test_burst_then_qps(fake_time: _Time) -> None:
    """With burst 3 and 10 QPS, three requests go at once and each later one waits 0.1 s."""
    bucket = TokenBucket(10, 3, monotonic=fake_time.monotonic, sleep=fake_time.sleep)
    for _ in range(5):
        await bucket.acquire()
    assert fake_time.slept == pytest.approx([0.1, 0.1])


async def test_idle_time_refills_up_to_burst(fake_time: _Time) -> None:
    """A long pause refills the bucket to its burst size, never beyond."""
    bucket = TokenBucket(10, 2, monotonic=fake_time.monotonic, sleep=fake_time.sleep)
    for _ in range(2):
        await bucket.acquire()
    fake_time.now += 60
    for _ in range(3):
        await bucket.acquire()
    assert fake_time.slept == pytest.approx([0.1])


def test_reservations_queue_in_order(fake_time: _Time) -> None:
    """Waiters reserve in arrival order: each later caller waits one interval longer."""
    bucket = TokenBucket(4, 1, monotonic=fake_time.monotonic, sleep=fake_time.sleep)
    waits = [bucket.reserve() for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.25, 0.5, 0.75])


def test_zero_qps_means_unlimited(fake_time: _Time) -> None:
    """A QPS of 0 turns the limiter off."""
    bucket = TokenBucket(0, 1, monotonic=fake_time.monotonic, sleep=fake_time.sleep)
    assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
