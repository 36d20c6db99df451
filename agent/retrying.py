"""One retry policy for every loop that repeats a failed call.

Every loop that retries asks it: node patches, the shutdown taint, the reflector, the
readiness controller, the logind session, the logind drop-in re-read, the NodeReport writer,
the leader elector and the supervisor's restarts of a failed root task. The first six used
to carry their own arithmetic and they disagreed (one capped a server's ``Retry-After``,
another did not). Now each asks a ``RetryPolicy`` how long to wait and whether to try
again, and keeps only what is its own: what counts as a failure, and what to do while
waiting.

The rules, in one place:
- exponential backoff, ``initial * factor**n`` up to ``cap``, stretched by a random jitter of
  up to ``jitter`` (a fraction) so that agents which failed together do not retry together;
- a server's ``Retry-After`` is honoured (never wait less) but capped (``retry_after_cap``,
  by default the backoff's cap), so a wrong header cannot park a loop for an hour;
- an attempt cap (tries in all, the first included), or none;
- a deadline (a monotonic time) is never crossed: a wait that would end past it is not
  taken, the caller gives up instead.

This is plumbing: both the kube and the logind adapters use it, and they may not import
each other.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_MAX_EXPONENT = 64
"""Past this the base delay is at any sane cap; it keeps ``factor**n`` from overflowing."""


@dataclass(frozen=True)
class Backoff:
    initial: float = 0.2
    factor: float = 2.0
    cap: float = 10.0
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (0-based), in
        ``[base, base * (1 + jitter)]`` where ``base = min(cap, initial * factor**attempt)``."""
        base = min(self.cap, self.initial * self.factor ** min(max(attempt, 0), _MAX_EXPONENT))
        return base * (1 + self.jitter * random.random())  # noqa: S311 - jitter, not crypto


@dataclass(frozen=True)
class RetryPolicy:
    backoff: Backoff = field(default_factory=Backoff)
    attempts: int | None = None
    """Tries in all, the first included; ``None``: no limit."""
    retry_after_cap: float | None = None
    """The longest a server's ``Retry-After`` may make us wait; ``None``: the backoff's cap."""
    monotonic: Callable[[], float] = time.monotonic

    def wait(self, failures: int, *, retry_after: float | None = None) -> float:
        """How long to wait after ``failures`` failures in a row (1 after the first)."""
        wait = self.backoff.delay(failures - 1)
        if retry_after is not None and retry_after > 0:
            cap = self.backoff.cap if self.retry_after_cap is None else self.retry_after_cap
            wait = max(wait, min(retry_after, cap))
        return wait

    def allows(self, failures: int, wait: float, *, deadline: float | None = None) -> bool:
        """Whether another try may follow ``failures`` failures after waiting ``wait``."""
        if self.attempts is not None and failures >= self.attempts:
            return False
        return deadline is None or self.monotonic() + wait <= deadline

    def next_wait(
        self,
        failures: int,
        *,
        retry_after: float | None = None,
        deadline: float | None = None,
    ) -> float | None:
        """The wait before the next try, or ``None`` to give up (attempts spent, or the
        wait would cross ``deadline``)."""
        wait = self.wait(failures, retry_after=retry_after)
        return wait if self.allows(failures, wait, deadline=deadline) else None
