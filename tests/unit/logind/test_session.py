"""The logind session's reconnect loop: no failure to connect may end it."""

from __future__ import annotations

import asyncio

import pytest

from agent.logind.bus import connect_system_bus
from agent.logind.errors import BusUnavailable
from agent.logind.session import BusLost, LogindSession

MALFORMED = "this-is-not-a-bus-address"


async def test_malformed_bus_address_is_a_bus_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed DBUS_SYSTEM_BUS_ADDRESS is reported as BusUnavailable, not a ValueError."""
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", MALFORMED)
    with pytest.raises(BusUnavailable, match="cannot connect to the system bus"):
        await connect_system_bus(1.0)


async def test_session_keeps_retrying_a_malformed_bus_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a malformed bus address the session reports BusLost and keeps retrying."""
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", MALFORMED)
    session = LogindSession(call_timeout=1.0, reconnect_initial=0.001, reconnect_cap=0.001)
    task = asyncio.create_task(session.run())
    try:
        for _ in range(3):
            event = await asyncio.wait_for(session.events.get(), 2)
            assert isinstance(event, BusLost)
            assert "cannot connect to the system bus" in event.reason
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
