"""Time as an injected dependency, so controllers can be driven by a fake clock in tests."""

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
