"""What ``doctor`` reports about logind: is it on the bus, and its inhibit delay."""

from __future__ import annotations

from dataclasses import dataclass

from agent.logind.bus import connect_system_bus
from agent.logind.errors import LogindError
from agent.logind.manager import LogindManager


@dataclass(frozen=True)
class LogindFacts:
    present: bool
    inhibit_delay_max_usec: int | None
    detail: str


async def read_logind_facts(timeout: float = 2.0) -> LogindFacts:
    try:
        bus = await connect_system_bus(timeout)
    except LogindError as error:
        return LogindFacts(False, None, str(error))
    try:
        delay = await LogindManager(bus, timeout).inhibit_delay_max_usec()
        return LogindFacts(True, delay, "org.freedesktop.login1 answered")
    except LogindError as error:
        return LogindFacts(False, None, str(error))
    finally:
        bus.disconnect()
