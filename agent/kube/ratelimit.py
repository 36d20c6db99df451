"""A client-side token bucket, like client-go's ``flowcontrol.NewTokenBucketRateLimiter``.

``--client-connection-qps`` refills it, ``--client-connection-burst`` is its size (their
defaults, and why they are not client-go's, are the descheduler's options'). Every request
the descheduler sends on its hot path takes one token first, so a pool of concurrent calls
can never exceed the rate the operator allowed. A QPS of 0 or less means no limit (client-go
does the same for a negative QPS).

Concurrency: used from the event loop only. Callers that wait are served in arrival order
(each reserves its token before sleeping), so the limiter never reorders requests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = _sleep,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._monotonic = monotonic
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._stamp = monotonic()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take a token now (possibly going into debt); return how long to wait for it."""
        if self.unlimited:
            return 0.0
        now = self._monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await self._sleep(wait)
