"""What ``doctor`` reports about logind: is it on the bus, its inhibit delay, who holds locks."""

from __future__ import annotations

from dataclasses import dataclass

from agent.logind.bus import connect_system_bus
from agent.logind.errors import LogindError
from agent.logind.manager import Inhibitor, LogindManager

KUBELET = "kubelet"
"""The ``who`` of kubelet's shutdown delay lock."""


@dataclass(frozen=True)
class LogindFacts:
    present: bool
    inhibit_delay_max_usec: int | None
    detail: str
    inhibitors: tuple[Inhibitor, ...] = ()


def kubelet_shutdown_delay_locks(inhibitors: tuple[Inhibitor, ...]) -> list[Inhibitor]:
    """kubelet's own shutdown delay locks: with one, two shutdown managers are at work."""
    return [lock for lock in inhibitors if lock.who == KUBELET and lock.delays_shutdown]


async def read_logind_facts(timeout: float = 2.0) -> LogindFacts:
    try:
        bus = await connect_system_bus(timeout)
    except LogindError as error:
        return LogindFacts(False, None, str(error))
    try:
        manager = LogindManager(bus, timeout)
        delay = await manager.inhibit_delay_max_usec()
        try:
            inhibitors = tuple(await manager.list_inhibitors())
        except LogindError:
            inhibitors = ()  # logind answered; only the lock list is unknown
        return LogindFacts(True, delay, "org.freedesktop.login1 answered", inhibitors)
    except LogindError as error:
        return LogindFacts(False, None, str(error))
    finally:
        bus.disconnect()
