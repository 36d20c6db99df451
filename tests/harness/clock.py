"""A hand-driven clock for tests: time moves only when the test says so.

It satisfies ``agent.clock.Clock``, so a controller, the leader elector or the
supervisor can be driven step by step with no real sleeps: ``sleep`` returns only once
``advance`` has moved monotonic time past its end. ``SkewedClock`` is another host's view of
the same time (the same monotonic clock, a wall clock off by some seconds).
"""

from __future__ import annotations

import asyncio


class HandClock:
    """Monotonic time moves only when a test calls ``advance``; sleepers wake then."""

    def __init__(self, start: float = 1000.0, *, epoch: float = 1_750_000_000.0) -> None:
        self.t = start
        self.epoch = epoch
        """Wall-clock time at monotonic 0: ``now()`` is ``epoch + t``."""
        self._moved = asyncio.Event()
        self.sleeping = 0
        """Sleeps under way: a task parked on this clock until a test moves it."""

    def now(self) -> float:
        return self.epoch + self.t

    def monotonic(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        deadline = self.t + seconds
        self.sleeping += 1
        try:
            while self.t < deadline:
                self._moved.clear()
                await self._moved.wait()
        finally:
            self.sleeping -= 1

    def advance(self, seconds: float) -> None:
        self.t += seconds
        self._moved.set()


class SkewedClock:
    """Another host's clock: the same monotonic time, a wall clock off by ``skew`` seconds."""

    def __init__(self, base: HandClock, skew: float) -> None:
        self.base = base
        self.skew = skew

    def now(self) -> float:
        return self.base.now() + self.skew

    def monotonic(self) -> float:
        return self.base.monotonic()

    async def sleep(self, seconds: float) -> None:
        await self.base.sleep(seconds)
