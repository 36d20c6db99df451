"""The agent's one shutdown delay lock: kept when valid, re-taken only when really lost.

Two locks of ours would be worse than none: logind waits for *every* delay lock, so a
forgotten second fd makes the node wait the full ``InhibitDelayMaxSec`` at shutdown. Hence:

- ``ensure`` asks logind (``ListInhibitors``) whether it still lists our lock (our pid as
  logind sees it, and our ``who``). A logind restarted with its ``/run/systemd/inhibit``
  state intact still has it, so we keep it; only a lock that is really gone is replaced,
  and the old fd is closed as soon as the new one is in hand.
- ``release`` may be called from any thread (the budget watchdog calls it when the event
  loop might be stuck); after it, the keeper does not want a lock until ``want`` is called,
  and a lock that arrives from an ``Inhibit`` still in flight is closed at once.

Concurrency: ``_guard`` (a thread lock) covers the fd and the wanted flag; ``_serial`` (an
asyncio lock) keeps two ``ensure`` calls on the loop from both taking a lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from agent.logind.manager import DELAY, SHUTDOWN, Inhibitor, InhibitorLock

OPERATION_IN_PROGRESS = "org.freedesktop.login1.OperationInProgress"
"""logind refuses delay locks while the operation they would delay is already under way."""


class InhibitorApi(Protocol):
    async def inhibit(self, what: str, who: str, why: str, mode: str) -> InhibitorLock: ...

    async def list_inhibitors(self) -> list[Inhibitor]: ...


@dataclass(frozen=True)
class EnsureResult:
    action: Literal["kept", "taken", "not-wanted"]
    inhibitors: tuple[Inhibitor, ...]
    """What logind listed before we acted (to spot other shutdown managers)."""


class LockKeeper:
    def __init__(
        self, *, who: str, why: str, on_change: Callable[[bool], None] | None = None
    ) -> None:
        self.who = who
        self.why = why
        self._on_change = on_change or (lambda _held: None)
        self._guard = threading.Lock()
        self._lock: InhibitorLock | None = None
        self._wanted = True
        self._serial = asyncio.Lock()

    @property
    def held(self) -> bool:
        with self._guard:
            return self._lock is not None and self._lock.held

    @property
    def wanted(self) -> bool:
        with self._guard:
            return self._wanted

    def want(self) -> None:
        """Want a lock again (after a cancelled shutdown); ``ensure`` then takes it."""
        with self._guard:
            self._wanted = True

    def is_ours(self, inhibitor: Inhibitor, own_pid: int) -> bool:
        return inhibitor.pid == own_pid and inhibitor.who == self.who and inhibitor.delays_shutdown

    async def ensure(self, logind: InhibitorApi, own_pid: int) -> EnsureResult:
        """Hold exactly one lock if one is wanted. Raises ``LogindError`` on failure."""
        async with self._serial:
            if not self.wanted:
                return EnsureResult("not-wanted", ())
            listed = tuple(await logind.list_inhibitors())
            ours = [inhibitor for inhibitor in listed if self.is_ours(inhibitor, own_pid)]
            if self.held and ours:
                return EnsureResult("kept", listed)
            await self._take(logind)
            return EnsureResult("taken", listed)

    async def _take(self, logind: InhibitorApi) -> None:
        new = await logind.inhibit(SHUTDOWN, self.who, self.why, DELAY)
        with self._guard:
            if self._wanted:
                stale, self._lock = self._lock, new
            else:  # released while Inhibit was in flight: the release wins
                stale = new
        if stale is not None:
            stale.close()
        self._on_change(self.held)

    def release(self) -> bool:
        """Close the lock now and stop wanting one; any thread. Returns whether we held one."""
        with self._guard:
            self._wanted = False
            lock, self._lock = self._lock, None
        released = lock.close() if lock is not None else False
        self._on_change(False)
        return released
