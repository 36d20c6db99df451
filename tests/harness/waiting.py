"""Waiting in tests for state that other threads, processes or tasks (watches, HTTP, D-Bus,
child processes) change: one way to wait, for every test and harness.

Where the state's owner signals each change (a ``threading.Condition`` it notifies),
``wait_notified`` sleeps until the signal and looks again. Where there is no signal to await,
``wait_until`` (in a test's event loop) and ``wait_until_blocking`` (in a thread) poll. Every
wait is bounded: the bound guards against hangs and is never a speed assertion (those live
in ``scripts/bench``), and running into it fails the test with what it was waiting for. A wait
is for a positive signal: a test never sleeps and then asserts that nothing happened.

``each`` runs between two looks, for a wait that must make time pass itself (a hand clock
moved a step); ``retrying`` names the errors that mean "not yet" (a port not listening yet),
the last of which the failure shows.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

POLL_SECONDS = 0.01
"""How long a poll sleeps between two looks."""

Describe = str | Callable[[], str]
"""What a wait is for: a text, or a function giving one at the timeout (with the state seen
then, e.g. a log's tail)."""


class WaitTimedOut(AssertionError):
    """The awaited state did not come within the wait's bound."""

    def __init__(self, what: Describe, timeout: float, last_error: BaseException | None = None):
        described = what() if callable(what) else what
        message = f"timed out after {timeout} s waiting for {described}"
        if last_error is not None:
            message += f" (last: {last_error!r})"
        super().__init__(message)


class _Looks:
    """One wait's looks at its condition: the value, or the "not yet" error it raised."""

    def __init__(self, retrying: tuple[type[BaseException], ...]) -> None:
        self.retrying = retrying
        self.last_error: BaseException | None = None

    def take(self, look: Callable[[], Any]) -> Any:
        try:
            return look()
        except self.retrying as error:
            self.last_error = error
            return None


async def wait_until(
    condition: Callable[[], Any],
    what: Describe = "condition",
    timeout: float = 10.0,
    *,
    interval: float = POLL_SECONDS,
    each: Callable[[], object] | None = None,
    retrying: tuple[type[BaseException], ...] = (),
    blocking: bool = False,
) -> Any:
    """Return ``condition()``'s first truthy value; fail the test after ``timeout`` seconds.
    ``blocking`` runs each look in a worker thread (a harness call, a file read), so the
    event loop keeps serving the code under test meanwhile."""
    looks = _Looks(retrying)

    async def look() -> Any:
        if blocking:
            return await asyncio.to_thread(looks.take, condition)
        return looks.take(condition)

    try:
        async with asyncio.timeout(timeout):
            while not (value := await look()):
                if each is not None:
                    each()
                await asyncio.sleep(interval)
    except TimeoutError:
        raise WaitTimedOut(what, timeout, looks.last_error) from None
    return value


def wait_until_blocking(
    condition: Callable[[], Any],
    what: Describe = "condition",
    timeout: float = 10.0,
    *,
    interval: float = POLL_SECONDS,
    retrying: tuple[type[BaseException], ...] = (),
) -> Any:
    """``wait_until`` for a thread with no event loop (a test of a child process, a harness
    starting a server): blocks the calling thread between looks."""
    looks = _Looks(retrying)
    deadline = time.monotonic() + timeout
    while not (value := looks.take(condition)):
        if time.monotonic() >= deadline:
            raise WaitTimedOut(what, timeout, looks.last_error)
        time.sleep(interval)
    return value


def wait_notified(
    changed: threading.Condition, condition: Callable[[], Any], timeout: float
) -> Any:
    """Hold ``changed`` and return ``condition()``'s first truthy value, looking again each
    time ``changed`` is notified; after ``timeout`` seconds, its last (falsy) value. The
    caller says what a timeout means (an error of its own, or False)."""
    deadline = time.monotonic() + timeout
    with changed:
        while not (value := condition()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return value
            changed.wait(remaining)
        return value
