"""The agent's bus connection under faults and hostile peers: it stays alive, deaf to fakes.

Another client on the system bus is the test's own dbus-fast connection. To know that the
agent has dealt with everything such a peer sent, the peer finally calls a method on the
agent's connection and waits for the (error) reply: the bus delivers one sender's messages
in order, so by then the agent has seen all of them.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog
from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus

from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import ShutdownRig, until

pytestmark = pytest.mark.root

LOGIN1_PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"


@asynccontextmanager
async def peer(logind_harness: LogindHarness) -> AsyncIterator[MessageBus]:
    """Another client of the system bus, with fd passing on."""
    bus = await MessageBus(
        bus_type=BusType.SYSTEM, bus_address=logind_harness.bus_address, negotiate_unix_fd=True
    ).connect()
    try:
        yield bus
    finally:
        bus.disconnect()


async def round_trip(bus: MessageBus, agent: str) -> None:
    """Call the agent's connection and wait for its reply: all earlier messages were seen."""
    reply = await bus.call(
        Message(destination=agent, path="/", interface="org.example.Probe", member="Ping")
    )
    assert reply is not None
    assert reply.message_type is MessageType.ERROR


def open_fds() -> int:
    return len(list(Path("/proc/self/fd").iterdir()))


def agent_bus_name(rig: ShutdownRig) -> str:
    bus = rig.controller.logind.session.bus
    assert bus is not None
    assert bus.unique_name
    return str(bus.unique_name)


async def test_forged_prepare_for_shutdown_from_another_peer_is_ignored(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """PrepareForShutdown(true) broadcast or unicast by a non-logind peer starts nothing."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(buckets=[(0, 2)], pods=[pod("web", grace_seconds=1)])
    await rig.wait_for_lock()
    agent = agent_bus_name(rig)
    async with peer(logind_harness) as bus:
        await bus.send(Message.new_signal(LOGIN1_PATH, MANAGER, "PrepareForShutdown", "b", [True]))
        await bus.send(
            Message(
                message_type=MessageType.SIGNAL,
                destination=agent,
                path=LOGIN1_PATH,
                interface=MANAGER,
                member="PrepareForShutdown",
                signature="b",
                body=[True],
            )
        )
        await round_trip(bus, agent)
    before_real_signal = time.monotonic()
    assert rig.controller.record is None
    assert rig.pod_deletions() == []

    # The positive control: logind's own signal, which arrives after the forged ones were
    # seen, is the one and only shutdown; a forged one accepted would have started earlier.
    with structlog.testing.capture_logs() as logs:
        await rig.power_off()
        await until(rig.pod_deletions, 5, "the deletion for the real shutdown")
    assert len([e for e in logs if e["event"] == "node shutdown detected"]) == 1
    record = rig.controller.record
    assert record is not None
    assert record.start_monotonic is not None
    assert record.start_monotonic >= before_real_signal
    assert all(d.monotonic >= before_real_signal for d in rig.pod_deletions())


async def test_unsolicited_file_descriptors_are_closed(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Messages carrying fds that nobody waits for do not pile up open fds in the agent."""
    rig: ShutdownRig = await rig_factory(buckets=[(0, 2)], cluster=False)
    await rig.wait_for_lock()
    agent = agent_bus_name(rig)
    read_end, write_end = os.pipe()
    try:
        async with peer(logind_harness) as bus:
            before = open_fds()
            for _ in range(200):
                await bus.send(
                    Message(
                        message_type=MessageType.SIGNAL,
                        destination=agent,
                        path="/org/example",
                        interface="org.example.Spam",
                        member="Fd",
                        signature="h",
                        body=[0],
                        unix_fds=[read_end],
                    )
                )
            await round_trip(bus, agent)
            after = open_fds()
    finally:
        os.close(read_end)
        os.close(write_end)
    assert after - before < 20, f"{after - before} fds left open by 200 messages"
    assert len(await rig.our_locks()) == 1  # our own lock fd was not among those closed
    assert rig.controller.logind.keeper.held


async def test_bus_finalized_with_an_unexpected_error_is_reconnected(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A bus that dbus-fast ends with a non-OSError still reconnects; PowerOff is heard."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(buckets=[(0, 2)], pods=[pod("web", grace_seconds=1)])
    await rig.wait_for_lock()
    session = rig.controller.logind.session
    old = session.bus
    assert old is not None
    old._finalize(ValueError("invalid message from the bus"))  # dbus-fast's path on a bad frame
    await until(lambda: session.bus is not None and session.bus is not old, 5, "a new connection")
    assert rig.health.readiness().checks["logind-lock"] is True

    await rig.power_off()
    await until(rig.pod_deletions, 5, "the deletion after the reconnect")


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 8}], indirect=True)
async def test_prepare_for_shutdown_sent_while_reconnecting_still_starts_the_shutdown(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A PrepareForShutdown(true) missed during a reconnect is read back and acted on."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(buckets=[(0, 2)], pods=[pod("web", grace_seconds=1)])
    await rig.wait_for_lock()
    session = rig.controller.logind.session
    session.reconnect_initial = 1.0  # a wide window: the signal surely goes out meanwhile
    bus = session.bus
    assert bus is not None
    bus.disconnect()
    await until(lambda: not session.connected, 2, "the agent to notice the drop")
    signalled = await rig.power_off()
    assert not session.connected  # the signal went out while the agent was off the bus

    start_unit = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=15)
    assert rig.pod_deletions(), "the shutdown was missed: no pod deleted"
    assert start_unit.time - signalled < 8  # the lock went before logind's full delay
    await rig.final_state()
