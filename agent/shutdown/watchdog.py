"""The guarantee that the lock never outlives the budget, whatever the event loop is doing.

The shutdown run releases the lock itself when its phases end or its budget is spent. But
that relies on the event loop getting to run: a blocking call slipped onto the loop, a
stuck C extension or a pathological GC pause would keep the node waiting for the full
``InhibitDelayMaxSec``. This watchdog is a plain thread that sleeps until the budget's
end and then calls ``release`` (``LockKeeper.release``, which is idempotent and
thread-safe). If the run got there first, the call is a no-op.

Deadlines are on the ``monotonic`` clock it is given: the run passes its Clock's, the one
its deadlines were computed on (it must be callable from this thread; ``time.monotonic``
is, and a test's fake clock must be too). The event loop's own clock is no use here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

_log = structlog.get_logger(subsystem="shutdown.watchdog")


class BudgetWatchdog:
    def __init__(
        self,
        deadline: float,
        release: Callable[[], bool],
        *,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.deadline = deadline
        self._release = release
        self._monotonic = monotonic
        self._now = now
        self._disarmed = threading.Event()
        self._guard = threading.Lock()
        self.fired = False
        self.fired_at: float | None = None
        """Wall-clock time of the release, when the watchdog did it (the record's end)."""
        self._thread = threading.Thread(target=self._main, name="shutdown-watchdog", daemon=True)

    def arm(self) -> BudgetWatchdog:
        self._thread.start()
        return self

    def disarm(self) -> None:
        """Stop the watchdog; once this returns it will not release anything."""
        with self._guard:
            self._disarmed.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the thread has ended (disarmed or fired); return whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        while not self._disarmed.wait(max(0.0, self.deadline - self._monotonic())):
            if self._monotonic() >= self.deadline:
                break
        with self._guard:
            if self._disarmed.is_set():
                return
            self.fired = True
            released = self._release()
            if released:
                self.fired_at = self._now()
        if released:
            _log.info("budget spent: the watchdog closed the shutdown lock's fd")
