"""Exponential backoff with jitter, shared by every retry loop in the adapter.

Retry loops take a deadline as well as an attempt count: the shutdown path must never
retry past its phase deadline, whatever the API server does.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agent.kube.errors import RETRYABLE, KubeError, TooManyRequests

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    initial: float = 0.2
    factor: float = 2.0
    cap: float = 10.0
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (0-based)."""
        base = min(self.cap, self.initial * self.factor**attempt)
        return base * (1 + self.jitter * random.random())  # noqa: S311 - jitter, not crypto


async def retry_async(
    operation: Callable[[], Awaitable[T]],
    *,
    backoff: Backoff = Backoff(),
    attempts: int = 6,
    deadline: float | None = None,
    retry_on: tuple[type[KubeError], ...] = RETRYABLE,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``operation``; on a retryable error wait and run it again.

    Gives up after ``attempts`` tries, or when the next wait would cross ``deadline``
    (a ``time.monotonic`` value), re-raising the last error.
    """
    attempt = 0
    while True:
        try:
            return await operation()
        except retry_on as error:
            attempt += 1
            wait = backoff.delay(attempt - 1)
            if isinstance(error, TooManyRequests) and error.retry_after:
                wait = max(wait, min(error.retry_after, backoff.cap))
            if attempt >= attempts or (deadline is not None and monotonic() + wait > deadline):
                raise
            await asyncio.sleep(wait)
