"""Retries with backoff stop at the attempt limit or before crossing a deadline."""

import asyncio

import pytest

from agent.kube.backoff import Backoff, retry_async
from agent.kube.errors import Conflict, TooManyRequests, Unavailable

FAST = Backoff(initial=0.001, factor=2, cap=0.01, jitter=0)


def test_backoff_grows_and_caps() -> None:
    """Delays double from the initial value and stop at the cap."""
    backoff = Backoff(initial=0.1, factor=2, cap=0.5, jitter=0)
    assert [backoff.delay(i) for i in range(4)] == [0.1, 0.2, 0.4, 0.5]


async def test_retry_succeeds_after_transient_failures() -> None:
    """Unavailable twice, then success: the result comes back."""
    calls = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Unavailable("down")
        return "ok"

    assert await retry_async(flaky, backoff=FAST) == "ok"
    assert len(calls) == 3


async def test_retry_gives_up_after_attempts() -> None:
    """The last error is raised once attempts are spent."""

    async def always() -> None:
        raise TooManyRequests("slow down")

    with pytest.raises(TooManyRequests):
        await retry_async(always, backoff=FAST, attempts=3)


async def test_retry_does_not_sleep_past_the_deadline() -> None:
    """A wait that would cross the deadline is not taken."""
    now = [100.0]
    calls = []

    async def down() -> None:
        calls.append(1)
        raise Unavailable("down")

    with pytest.raises(Unavailable):
        await retry_async(
            down,
            backoff=Backoff(initial=5, jitter=0),
            deadline=103.0,
            monotonic=lambda: now[0],
            attempts=10,
        )
    assert len(calls) == 1


async def test_non_retryable_errors_pass_through_at_once() -> None:
    """A conflict is the caller's to handle, not retried blindly."""
    calls = []

    async def conflict() -> None:
        calls.append(1)
        raise Conflict("stale")

    with pytest.raises(Conflict):
        await retry_async(conflict, backoff=FAST)
    assert calls == [1]
    await asyncio.sleep(0)
