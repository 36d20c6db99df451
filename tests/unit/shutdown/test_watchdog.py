"""The budget watchdog: a thread that releases at the deadline unless disarmed first."""

from __future__ import annotations

import threading
import time

from agent.shutdown.watchdog import BudgetWatchdog


class Release:
    """Counts calls and notes when the first one came (monotonic)."""

    def __init__(self) -> None:
        self.calls = 0
        self.at: float | None = None
        self.event = threading.Event()

    def __call__(self) -> bool:
        self.calls += 1
        self.at = self.at or time.monotonic()
        self.event.set()
        return True


def test_fires_at_the_deadline_even_while_the_caller_is_blocked() -> None:
    """With the calling thread blocked, the watchdog calls release, and not before the deadline."""
    release = Release()
    deadline = time.monotonic() + 0.05
    watchdog = BudgetWatchdog(deadline, release).arm()
    assert release.event.wait(5)  # this thread is blocked meanwhile, like a stuck event loop
    assert release.at is not None
    assert release.at >= deadline
    assert watchdog.join(5)
    assert watchdog.fired
    assert release.calls == 1


def test_disarmed_watchdog_never_releases() -> None:
    """Disarming before the deadline means release is never called."""
    release = Release()
    watchdog = BudgetWatchdog(time.monotonic() + 0.05, release).arm()
    watchdog.disarm()
    assert watchdog.join(5)  # the thread is over: it can never call release now
    assert release.calls == 0
    assert not watchdog.fired


def test_deadline_in_the_past_fires_at_once() -> None:
    """A budget already spent (a late resume) is released immediately."""
    release = Release()
    BudgetWatchdog(time.monotonic() - 1, release).arm()
    assert release.event.wait(2)


def test_the_given_clock_decides_when_the_deadline_comes() -> None:
    """The deadline is read on the injected monotonic clock, not on time.monotonic."""
    release = Release()
    watchdog = BudgetWatchdog(1_000.0, release, monotonic=lambda: 1_000.0).arm()
    assert release.event.wait(2)
    assert watchdog.fired
