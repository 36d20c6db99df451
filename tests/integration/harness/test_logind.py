"""Self-tests of the logind harness: the real logind's inhibitor protocol, end to end.

These pin the logind behaviour the agent relies on (delay locks hold PowerOff until
the fd is closed or InhibitDelayMaxSec passes, locks survive a logind restart,
drop-ins take effect on SIGHUP sent through systemd1's KillUnit), observed with
dbus-fast exactly as the agent will talk to logind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from typing import NamedTuple

import pytest
from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus

from tests.harness.logind import LogindHarness
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.root


class Target(NamedTuple):
    destination: str
    path: str
    interface: str


DBUS = Target("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
LOGIN1 = Target(
    "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager"
)
SYSTEMD1 = Target(
    "org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"
)
POWEROFF_START = ("poweroff.target", "replace-irreversibly")


@pytest.fixture
async def system_bus(logind_harness: LogindHarness) -> AsyncIterator[MessageBus]:
    """A dbus-fast connection to the harness's bus via DBUS_SYSTEM_BUS_ADDRESS, fd passing on."""
    bus = await MessageBus(bus_type=BusType.SYSTEM, negotiate_unix_fd=True).connect()
    try:
        yield bus
    finally:
        bus.disconnect()


async def call(bus: MessageBus, target: Target, member: str, sig: str, *body: object) -> Message:
    message = Message(
        destination=target.destination,
        path=target.path,
        interface=target.interface,
        member=member,
        signature=sig,
        body=list(body),
    )
    reply = await bus.call(message)
    assert reply is not None
    assert reply.message_type is MessageType.METHOD_RETURN, reply.body
    return reply


async def take_delay_lock(bus: MessageBus) -> int:
    """``Inhibit("shutdown", "test", "why", "delay")``; returns the lock's fd (ours to close)."""
    reply = await call(bus, LOGIN1, "Inhibit", "ssss", "shutdown", "test", "why", "delay")
    assert reply.signature == "h"
    return int(reply.unix_fds[reply.body[0]])


async def prepare_for_shutdown_queue(bus: MessageBus) -> asyncio.Queue[bool]:
    """Subscribe this connection to PrepareForShutdown; values arrive on the returned queue."""
    queue: asyncio.Queue[bool] = asyncio.Queue()

    def on_message(msg: Message) -> bool:
        if msg.message_type is MessageType.SIGNAL and msg.member == "PrepareForShutdown":
            queue.put_nowait(bool(msg.body[0]))
        return False

    bus.add_message_handler(on_message)
    rule = "type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForShutdown'"
    await call(bus, DBUS, "AddMatch", "s", rule)
    return queue


async def test_delay_lock_holds_poweroff_until_fd_closed(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """A delay lock holds poweroff.target back until its fd is closed, then logind proceeds."""
    signals = await prepare_for_shutdown_queue(system_bus)
    fd = await take_delay_lock(system_bus)

    # logind answers PowerOff once it has decided: with no lock to wait for, it has called
    # StartUnit by then (a blocking call of its own), so none recorded now means it waits.
    logind_harness.power_off()
    assert logind_harness.systemd1.calls("StartUnit") == []
    assert await asyncio.wait_for(signals.get(), 5) is True
    # Real time passes with the lock held (well inside InhibitDelayMaxSec=5): logind must
    # hold poweroff all along, which StartUnit's time after the release shows below.
    await asyncio.sleep(0.3)

    released = time.monotonic()
    os.close(fd)
    start = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=5)
    assert start.args == POWEROFF_START
    assert start.time >= released
    assert await asyncio.wait_for(signals.get(), 5) is False
    finished = await logind_harness.wait_for_prepare_for_shutdown_async(False, timeout=5)
    assert finished > start.time
    assert [value for value, _ in logind_harness.prepare_for_shutdown_signals()] == [True, False]


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 1}], indirect=True)
async def test_unreleased_delay_lock_expires_after_inhibit_delay_max(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """A delay lock never released only postpones poweroff.target by InhibitDelayMaxSec (1 s)."""
    fd = await take_delay_lock(system_bus)
    try:
        requested = time.monotonic()
        logind_harness.power_off()
        start = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=10)
        assert start.args == POWEROFF_START
        # logind arms its 1 s timer after our call, so this lower bound is causal, not timing.
        assert 0.9 <= start.time - requested < 6
        await logind_harness.wait_for_prepare_for_shutdown_async(False, timeout=5)
    finally:
        os.close(fd)


async def test_list_inhibitors_shows_our_lock(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """ListInhibitors reports our delay lock with this process's pid and root's uid."""
    assert logind_harness.list_inhibitors() == []
    fd = await take_delay_lock(system_bus)
    try:
        assert logind_harness.list_inhibitors() == [
            ("shutdown", "test", "why", "delay", 0, os.getpid())
        ]
    finally:
        os.close(fd)


async def test_lock_survives_logind_restart_with_kept_state(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """A restarted logind restores a held lock from /run/systemd/inhibit; closing still frees it."""
    fd = await take_delay_lock(system_bus)
    old_pid = logind_harness.logind_pid
    logind_harness.restart_logind(keep_inhibit_state=True)
    assert logind_harness.logind_pid not in (None, old_pid)
    assert logind_harness.list_inhibitors() == [
        ("shutdown", "test", "why", "delay", 0, os.getpid())
    ]

    os.close(fd)
    await wait_until(
        lambda: not logind_harness.list_inhibitors(),
        "the restored lock dropped after its fd was closed",
        5,
        interval=0.02,
    )


async def test_lock_is_lost_when_logind_restarts_without_state(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """Wiping /run/systemd/inhibit across a logind restart really drops the lock."""
    fd = await take_delay_lock(system_bus)
    try:
        logind_harness.restart_logind(keep_inhibit_state=False)
        assert logind_harness.list_inhibitors() == []
    finally:
        os.close(fd)


async def test_dropin_applies_after_sighup_via_killunit(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """A drop-in with InhibitDelayMaxSec=30 takes effect once KillUnit(SIGHUP) reaches logind."""
    assert logind_harness.inhibit_delay_max_usec() == 5_000_000
    (logind_harness.dropin_dir / "50-kubelet-companion.conf").write_text(
        "[Login]\nInhibitDelayMaxSec=30\n"
    )
    await call(
        system_bus,
        SYSTEMD1,
        "KillUnit",
        "ssi",
        "systemd-logind.service",
        "main",
        int(signal.SIGHUP),
    )

    assert logind_harness.systemd1.calls("KillUnit")[-1].args == (
        "systemd-logind.service",
        "main",
        int(signal.SIGHUP),
    )
    await asyncio.to_thread(logind_harness.wait_for_inhibit_delay_max_usec, 30_000_000, 5)


async def test_failed_poweroff_job_still_ends_prepare_for_shutdown(
    logind_harness: LogindHarness,
) -> None:
    """A poweroff job that systemd1 reports "failed" still ends in PrepareForShutdown(false)."""
    logind_harness.systemd1.configure_jobs(result="failed")
    logind_harness.power_off()
    start = logind_harness.systemd1.wait_for_call("StartUnit", timeout=5)
    done = await logind_harness.wait_for_prepare_for_shutdown_async(False, timeout=5)
    assert done > start.time
    assert logind_harness.systemd1.unhandled_calls() == []


def test_harness_starts_fast_and_leaves_nothing_behind() -> None:
    """The harness starts in well under 2 s and its stop() kills logind and dbus-daemon."""
    from tests.harness.logind.fixtures import unavailable_reason  # noqa: PLC0415 - skip check first

    if (reason := unavailable_reason()) is not None:
        pytest.skip(reason)
    began = time.monotonic()
    with LogindHarness() as harness:
        elapsed = time.monotonic() - began
        logind_pid = harness.logind_pid
        workdir = harness.workdir
        assert logind_pid is not None
    assert elapsed < 2
    with pytest.raises(ProcessLookupError):
        os.kill(logind_pid, 0)
    assert not workdir.exists()


async def test_systemd1_stand_in_serves_units_at_systemd_escaped_paths(
    logind_harness: LogindHarness, system_bus: MessageBus
) -> None:
    """GetUnit returns systemd's escaped object path, where a loaded Unit object answers."""
    reply = await call(system_bus, SYSTEMD1, "GetUnit", "s", "poweroff.target")
    assert reply.body == ["/org/freedesktop/systemd1/unit/poweroff_2etarget"]
    unit = Target(SYSTEMD1.destination, reply.body[0], "org.freedesktop.DBus.Properties")
    load_state = await call(
        system_bus, unit, "Get", "ss", "org.freedesktop.systemd1.Unit", "LoadState"
    )
    assert load_state.body[0].value == "loaded"
