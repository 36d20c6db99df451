"""D-Bus calls with timeouts on a real private dbus-daemon: late replies lose no fd."""

import asyncio
import os
import select
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from dbus_fast import BusType
from dbus_fast.aio import MessageBus
from dbus_fast.errors import DBusError
from dbus_fast.service import ServiceInterface, method

from agent.logind.bus import call, connect_system_bus
from agent.logind.errors import CallFailed, CallTimeout
from tests.harness.logind.bus import PrivateSystemBus, find_dbus_daemon

SERVICE = "io.kubelet_companion.Test"


class SlowLocks(ServiceInterface):
    """Hands out the write end of a pipe, like logind hands out an inhibitor fd, but late."""

    def __init__(self, delay: float) -> None:
        super().__init__(SERVICE)
        self.delay = delay
        self.read_end, self._write_end = os.pipe()

    @method()
    async def Take(self) -> "h":  # type: ignore[name-defined]  # noqa: F821, N802 - D-Bus signature and name
        await asyncio.sleep(self.delay)
        # Our own copy is closed after the reply has been sent; only the caller's remains.
        asyncio.get_running_loop().call_later(0.2, os.close, self._write_end)
        return self._write_end

    @method()
    def Fail(self) -> "s":  # type: ignore[name-defined]  # noqa: F821, N802 - D-Bus signature and name
        raise DBusError("io.kubelet_companion.Error.Refused", "refused")


@pytest.fixture
async def private_bus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    if find_dbus_daemon() is None:
        pytest.skip("dbus-daemon is not installed (Debian package dbus)")
    daemon = PrivateSystemBus(tmp_path)
    daemon.start()
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", daemon.address)
    try:
        yield daemon.address
    finally:
        daemon.stop()


async def _serve(interface: ServiceInterface) -> MessageBus:
    bus = await MessageBus(bus_type=BusType.SYSTEM, negotiate_unix_fd=True).connect()
    bus.export("/test", interface)
    await bus.request_name(SERVICE)
    return bus


def _closed_everywhere(read_end: int, timeout: float) -> bool:
    """True once every write end of the pipe is closed (the read end sees EOF)."""
    ready, _, _ = select.select([read_end], [], [], timeout)
    return bool(ready) and os.read(read_end, 1) == b""


async def test_an_fd_in_a_reply_that_arrives_after_the_timeout_is_closed(private_bus: str) -> None:
    """A lock fd logind sends after we timed out is closed, not held until exit."""
    locks = SlowLocks(delay=0.5)
    service = await _serve(locks)
    client = await connect_system_bus(timeout=5)
    try:
        with pytest.raises(CallTimeout):
            await call(
                client,
                destination=SERVICE,
                path="/test",
                interface=SERVICE,
                member="Take",
                timeout=0.1,
            )
        assert await asyncio.to_thread(_closed_everywhere, locks.read_end, 5)
    finally:
        client.disconnect()
        service.disconnect()
        os.close(locks.read_end)


async def test_errors_from_the_peer_are_call_failed(private_bus: str) -> None:
    """A D-Bus error reply becomes CallFailed naming the error."""
    service = await _serve(SlowLocks(delay=0))
    client = await connect_system_bus(timeout=5)
    try:
        with pytest.raises(CallFailed, match="refused"):
            await call(
                client,
                destination=SERVICE,
                path="/test",
                interface=SERVICE,
                member="Fail",
                timeout=2,
            )
    finally:
        client.disconnect()
        service.disconnect()
