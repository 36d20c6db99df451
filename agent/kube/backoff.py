"""The shared retry policy (``agent.retrying``) applied to API calls.

Retry loops take a deadline as well as an attempt count: the shutdown path must never
retry past its phase deadline, whatever the API server does. A 429's ``Retry-After`` is
read from the error here, so the policy needs to know nothing about our error classes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agent.kube.errors import RETRYABLE, KubeError, TooManyRequests
from agent.retrying import Backoff, RetryPolicy

T = TypeVar("T")

__all__ = ["Backoff", "RetryPolicy", "retry_after_of", "retry_async"]


def retry_after_of(error: BaseException) -> float | None:
    """The server's ``Retry-After`` if the error carries one (a 429)."""
    return error.retry_after if isinstance(error, TooManyRequests) else None


async def retry_async(
    operation: Callable[[], Awaitable[T]],
    *,
    backoff: Backoff = Backoff(),
    attempts: int | None = 6,
    deadline: float | None = None,
    retry_on: tuple[type[KubeError], ...] = RETRYABLE,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``operation``; on a retryable error wait and run it again.

    Gives up after ``attempts`` tries (``None``: only the deadline ends the retries), or when
    the next wait would cross ``deadline`` (a ``monotonic`` value), re-raising the last
    error. ``monotonic`` and ``sleep`` are an injected clock's where the caller has one (the
    leader elector), so a test drives the waits in fake time.
    """
    policy = RetryPolicy(backoff, attempts=attempts, monotonic=monotonic)
    failures = 0
    while True:
        try:
            return await operation()
        except retry_on as error:
            failures += 1
            wait = policy.next_wait(failures, retry_after=retry_after_of(error), deadline=deadline)
            if wait is None:
                raise
            await sleep(wait)
