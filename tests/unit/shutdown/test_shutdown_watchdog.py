"""The budget watchdog: a thread that releases at the deadline unless disarmed first."""

from __future__ import annotations

import threading
import time

from agent.shutdown.watchdog import BudgetWatchdog


def test_fires_at_the_deadline_even_while_the_loop_is_blocked() -> None:
    """With the calling thread blocked, the watchdog still calls release at the deadline."""
    released = threading.Event()

    def release() -> bool:
        released.set()
        return True

    watchdog = BudgetWatchdog(time.monotonic() + 0.05, release).arm()
    time.sleep(0.2)  # a blocked event loop, in effect
    assert released.is_set()
    assert watchdog.fired


def test_disarmed_watchdog_never_releases() -> None:
    """Disarming before the deadline means release is never called."""
    calls: list[int] = []

    def release() -> bool:
        calls.append(1)
        return True

    watchdog = BudgetWatchdog(time.monotonic() + 0.05, release).arm()
    watchdog.disarm()
    time.sleep(0.15)
    assert calls == []
    assert not watchdog.fired


def test_deadline_in_the_past_fires_at_once() -> None:
    """A budget already spent (a late resume) is released immediately."""
    released = threading.Event()
    BudgetWatchdog(time.monotonic() - 1, lambda: released.set() or True).arm()
    assert released.wait(2)
