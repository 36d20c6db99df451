"""TEST-ONLY switches that break the agent on purpose, to prove the soak can fail.

``scripts/soak --break NAME`` applies one of these inside the agent's own process, before
``agent.cli.main`` runs (``tests/soak/agent_child.py``). Nothing here is imported by the
product, and nothing changes the product's files: the break exists only in the processes
the soak starts with it. A soak that reports no violation with a break applied has an
invariant that cannot fail.

- ``relock-on-logind-restart``: whenever logind (re)appears on the bus, take another
  shutdown delay lock and keep the fd, without asking ``ListInhibitors`` first — the bug
  the "never two locks" rule guards against (logind restored the old lock from
  ``/run/systemd/inhibit``, so now there are two).
- ``hold-past-budget``: every release of the lock happens 2 s late — the bug the "released
  by the budget's end" rule guards against.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

BREAKS: dict[str, str] = {
    "relock-on-logind-restart": "take another lock on every logind restart, keeping the old one",
    "hold-past-budget": "release the shutdown lock 2 s after it should be released",
}


def apply(name: str) -> None:
    """Patch the agent's classes in this process (the agent child) for break ``name``."""
    appliers: dict[str, Callable[[], None]] = {
        "relock-on-logind-restart": _relock_on_logind_restart,
        "hold-past-budget": _hold_past_budget,
    }
    appliers[name]()


def _relock_on_logind_restart() -> None:
    from agent.logind.session import LogindOwnerChanged  # noqa: PLC0415 - child process only
    from agent.shutdown import inhibitor  # noqa: PLC0415 - child process only

    original = inhibitor.InhibitorGuard.on_bus_event
    leaked: list[Any] = []

    async def on_bus_event(self: inhibitor.InhibitorGuard, event: Any) -> None:
        manager = self.session.manager
        if isinstance(event, LogindOwnerChanged) and event.owner is not None and manager:
            # BROKEN ON PURPOSE: no ListInhibitors, and the old lock is never closed.
            leaked.append(await manager.inhibit("shutdown", inhibitor.WHO, inhibitor.WHY, "delay"))
            return
        await original(self, event)

    inhibitor.InhibitorGuard.on_bus_event = on_bus_event  # type: ignore[method-assign]


def _hold_past_budget() -> None:
    from agent.logind import keeper  # noqa: PLC0415 - child process only

    original = keeper.LockKeeper.release

    def release(self: keeper.LockKeeper) -> bool:
        # BROKEN ON PURPOSE: the fd is closed 2 s after the budget said so.
        threading.Timer(2.0, original, args=(self,)).start()
        return True

    keeper.LockKeeper.release = release  # type: ignore[method-assign]
