"""Time as an injected dependency, so controllers can be driven by a fake clock in tests.

Why here, in the plumbing: every layer that decides anything by time takes a ``Clock``, so a
test can drive minutes of it in no time. That includes the leader elector in the kube
adapter (its lease rules are client-go's, judged on this clock), the runtime's supervisor
and the capabilities' controllers. An adapter may not import ``agent.runtime`` (the layers
contract in pyproject.toml), so while the clock lived there the elector kept a second copy
of the protocol; here, below every layer that needs it, there is one.
"""

from __future__ import annotations

import asyncio
import time
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


async def sleep_or_set(clock: Clock, seconds: float | None, *events: asyncio.Event) -> bool:
    """Sleep ``seconds`` on ``clock`` (``None``: no timer) unless one of ``events`` is set
    first; ``True`` when one was (already set counts), ``False`` when the time ran out.

    The one place the race "until something happens, or a timer" is written: both sides
    are tasks, and the loser is cancelled whichever way the wait ends (a cancel of the
    caller included), so no sleeper or waiter outlives it.
    """
    if any(event.is_set() for event in events):
        return True
    waiters = {asyncio.ensure_future(event.wait()) for event in events}
    timer = asyncio.ensure_future(clock.sleep(seconds)) if seconds is not None else None
    racing = waiters | ({timer} if timer is not None else set())
    try:
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in racing:
            task.cancel()
    return any(event.is_set() for event in events)
