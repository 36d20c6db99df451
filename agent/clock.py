"""Time as an injected dependency, so controllers can be driven by a fake clock in tests.

Why here, in the plumbing: every layer that decides anything by time takes a ``Clock``, so a
test can drive minutes of it in no time. That includes the leader elector in the kube
adapter (its lease rules are client-go's, judged on this clock), the runtime's supervisor
and the capabilities' controllers. An adapter may not import ``agent.runtime`` (the layers
contract in pyproject.toml), so while the clock lived there the elector kept a second copy
of the protocol; here, below every layer that needs it, there is one.

The races are here for the same reason: "sleep until an event, a task or a timer" was
written by hand in a dozen modules, each deciding for itself which side to cancel. Now each
asks ``sleep_or_set`` (events) or ``sleep_or_done`` (tasks and coroutines), and keeps only
what is its own: what it waits for, and on which clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock Unix seconds (for records, metrics and state files)."""

    def monotonic(self) -> float:
        """Monotonic seconds (for deadlines and durations)."""

    async def sleep(self, seconds: float) -> None:
        """Sleep; a fake clock may return at once."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


async def first_done(*waits: Awaitable[object]) -> None:
    """Wait until one of ``waits`` is done (a result, an error or a cancel: all count).

    The one place the race "until something happens" is written. Ownership decides what is
    cancelled: a coroutine is wrapped in a task of our own, and those are cancelled however
    the wait ends (a cancel of the caller included), so none outlives it; a future passed
    in (a task of the caller's) is only watched, never cancelled, and its error is not
    raised here: its owner decides its fate and reads its result.
    """
    futures: list[asyncio.Future[object]] = []
    ours: list[asyncio.Future[object]] = []
    try:
        for wait in waits:
            future: asyncio.Future[object] = asyncio.ensure_future(wait)
            futures.append(future)
            if future is not wait:
                ours.append(future)
        await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for own in ours:
            own.cancel()


async def sleep_or_done(clock: Clock, seconds: float | None, *waits: Awaitable[object]) -> None:
    """Sleep ``seconds`` on ``clock`` (``None``: no timer) unless one of ``waits`` is done
    first. The timer is ours; the ``waits`` are owned as ``first_done`` says, so the caller
    tells what happened from its own futures (``done()``) or state."""
    # The timer runs from now, not from when its task first runs: a task starts a loop turn
    # later, and a clock moved meanwhile (a test's hand clock, a slow loop) would otherwise
    # push the deadline out by that much.
    timer = [_sleep_until(clock, clock.monotonic() + seconds)] if seconds is not None else []
    await first_done(*waits, *timer)


async def _sleep_until(clock: Clock, deadline: float) -> None:
    await clock.sleep(max(0.0, deadline - clock.monotonic()))


async def sleep_or_set(clock: Clock, seconds: float | None, *events: asyncio.Event) -> bool:
    """Sleep ``seconds`` on ``clock`` (``None``: no timer) unless one of ``events`` is set
    first; ``True`` when one was (already set counts), ``False`` when the time ran out.

    Both sides are tasks of ours (``sleep_or_done``), and the loser is cancelled whichever
    way the wait ends (a cancel of the caller included), so no sleeper or waiter outlives it.
    """
    if any(event.is_set() for event in events):
        return True
    await sleep_or_done(clock, seconds, *(event.wait() for event in events))
    return any(event.is_set() for event in events)
