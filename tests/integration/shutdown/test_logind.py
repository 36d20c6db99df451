"""The lock across logind's life: cancellation, restarts with and without state, the override."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog
from dbus_fast import BusType, Message
from dbus_fast.aio import MessageBus

from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import DEFAULT_DROPIN_NAME, ShutdownRig, until

pytestmark = pytest.mark.root


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 10}], indirect=True)
async def test_cancelled_poweroff_removes_the_taint_and_leaves_a_new_lock(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A cancelled PowerOff removes the taint and leaves exactly one new lock held."""
    logind_harness.systemd1.configure_jobs(result="canceled", delay=0.3)
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 2), (1000, 2)], pods=[pod("web", grace_seconds=1)], time_scale=0.2
    )
    await rig.wait_for_lock()
    signalled = await rig.power_off()
    await until(rig.has_taint, 5, "the taint during the shutdown")
    await logind_harness.wait_for_prepare_for_shutdown_async(False, timeout=10, since=signalled)

    await until(lambda: not rig.has_taint(), 5, "the taint to be removed")
    await rig.wait_for_lock(timeout=5)
    assert len(await rig.our_locks()) == 1
    await until(lambda: rig.state()["status"] == "cancelled", 5, "the cancelled record")
    assert rig.metric("kubelet_companion_inhibitor_lock_held") == 1
    assert rig.health.readiness().checks["logind-lock"] is True
    assert rig.server is not None
    messages = await until(
        lambda: (
            [
                e["message"]
                for e in rig.server.list("events", "default")
                if e.get("reason") == "Shutdown"
            ]
            if len(rig.server.list("events", "default")) >= 2
            else None
        ),
        5,
        "the cancellation event",
    )
    assert "Shutdown manager detected shutdown cancellation" in messages

    # The new lock is a working one: the next PowerOff waits for the agent again.
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    second = await rig.power_off()
    start_unit = await logind_harness.systemd1.wait_for_call_async(
        "StartUnit", timeout=10, since=second
    )
    assert start_unit.time >= second
    await until(lambda: rig.state()["status"] == "finished", 5, "the second shutdown's record")


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
async def test_logind_restart_keeps_exactly_one_lock_and_poweroff_is_not_delayed(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """After a logind restart one lock of ours is listed and PowerOff is not delayed."""
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 3), (1000, 3)], pods=[pod("web", grace_seconds=1)], time_scale=0.2
    )
    await rig.wait_for_lock()
    (before,) = await rig.our_locks()

    with structlog.testing.capture_logs() as logs:
        await asyncio.to_thread(logind_harness.restart_logind, True)
        await until(
            lambda: any("survived the logind restart" in e["event"] for e in logs),
            1.0,
            "the agent's check of its lock after the restart",
        )
        assert await rig.our_locks() == [before]
        await rig.bus_events_handled(logs)  # anything the restart caused has happened now
    assert await rig.our_locks() == [before]
    assert not [e for e in logs if e["event"] == "shutdown delay lock taken"]

    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    signalled = await rig.power_off()
    start_unit = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=20)
    assert rig.kubelet is not None
    removed = rig.kubelet.removed_at("default", "web")
    assert removed is not None
    assert start_unit.time >= removed
    # The phases ended long before the 20 s delay: logind did not wait for a stray lock.
    assert start_unit.time - signalled < 6


async def test_buckets_of_zero_seconds_turn_shutdown_off_and_take_no_lock(
    rig_factory: Callable[..., Any],
) -> None:
    """Buckets that add up to 0 s turn graceful shutdown off, by kubelet's rule (the budget
    decides, not whether buckets are listed): the agent takes no delay lock and its
    readiness does not wait for one."""
    with structlog.testing.capture_logs() as logs:
        rig: ShutdownRig = await rig_factory(buckets=[(0, 0), (1000, 0)], cluster=False)
        await until(
            lambda: any(e["event"].startswith("graceful node shutdown is off") for e in logs),
            5,
            "the agent to find graceful shutdown off",
        )
    # Off is decided before the bus is ever connected: no lock can come later.
    assert await rig.our_locks() == []
    assert "logind-lock" not in rig.health.readiness().checks
    assert rig.metric("kubelet_companion_shutdown_budget_seconds") == 0


async def test_lost_lock_is_taken_again_within_a_second(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A lock lost in a logind restart (state wiped) is taken again within 1 s."""
    rig: ShutdownRig = await rig_factory(buckets=[(0, 3)], cluster=False)
    await rig.wait_for_lock()

    await asyncio.to_thread(logind_harness.restart_logind, False)
    restarted = time.monotonic()
    await rig.wait_for_lock(timeout=1.0)
    assert time.monotonic() - restarted <= 1.0
    with structlog.testing.capture_logs() as logs:
        await rig.bus_events_handled(logs)  # anything the restart caused has happened now
    assert len(await rig.our_locks()) == 1

    # The fd we hold now is the listed lock: closing it (at shutdown) frees logind at once.
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    signalled = await rig.power_off()
    start_unit = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=5)
    assert start_unit.time - signalled < 3  # the 5 s default delay did not run out


async def test_override_raises_a_short_delay_to_the_budget(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A 5 s delay under a 30 s budget: drop-in, logind reload, 35 s read back."""
    assert logind_harness.inhibit_delay_max_usec() == 5_000_000
    rig: ShutdownRig = await rig_factory(buckets=[(0, 10), (1000, 10), (2000, 10)], cluster=False)
    await until(
        lambda: rig.metric("kubelet_companion_logind_inhibit_delay_max_seconds") == 35,
        10,
        "the raised delay",
    )
    dropin = logind_harness.dropin_dir / DEFAULT_DROPIN_NAME
    assert "[Login]\n" in dropin.read_text()
    assert "InhibitDelayMaxSec=35\n" in dropin.read_text()
    kill = logind_harness.systemd1.calls("KillUnit")
    assert [call.args for call in kill] == [("systemd-logind.service", "all", int(signal.SIGHUP))]
    assert await asyncio.to_thread(logind_harness.inhibit_delay_max_usec) == 35_000_000
    assert rig.metric("kubelet_companion_logind_inhibit_delay_too_short") == 0
    assert "logind-inhibit-delay" not in rig.health.degraded()
    await rig.wait_for_lock()


async def test_override_that_never_takes_effect_degrades_but_keeps_the_lock(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """An override that never applies: metric set, agent degraded, lock still held."""
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 30)], cluster=False, dropin=rig_dropin_elsewhere(logind_harness)
    )
    await until(
        lambda: rig.metric("kubelet_companion_logind_inhibit_delay_too_short") == 1,
        10,
        "the too-short metric",
    )
    assert "InhibitDelayMaxSec" in rig.health.degraded()["logind-inhibit-delay"]
    assert rig.metric("kubelet_companion_logind_inhibit_delay_max_seconds") == 5
    await rig.wait_for_lock()
    assert not rig.tasks[-1].done()  # no crash, no crash loop


async def test_a_leftover_kubelet_dropin_does_not_override_ours(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Real logind applies our default drop-in after kubelet's 99-kubelet.conf: ours wins."""
    logind_harness.write_dropin("99-kubelet.conf", "[Login]\nInhibitDelayMaxSec=5\n")
    rig: ShutdownRig = await rig_factory(buckets=[(0, 30)], cluster=False)
    await until(
        lambda: rig.metric("kubelet_companion_logind_dropin_overridden") == 0,
        10,
        "the drop-in order check",
    )
    await until(
        lambda: rig.metric("kubelet_companion_logind_inhibit_delay_max_seconds") == 35,
        10,
        "the raised delay",
    )
    assert rig.metric("kubelet_companion_logind_inhibit_delay_too_short") == 0
    assert "logind-dropin-order" not in rig.health.degraded()


async def test_a_dropin_applied_after_ours_is_reported(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A drop-in logind applies after ours sets the delay: warned, counted, degraded."""
    later = logind_harness.write_dropin("99-zzz.conf", "[Login]\nInhibitDelayMaxSec=5\n")
    rig: ShutdownRig = await rig_factory(buckets=[(0, 30)], cluster=False)
    await until(
        lambda: rig.metric("kubelet_companion_logind_dropin_overridden") == 1,
        10,
        "the drop-in order check",
    )
    problem = rig.health.degraded()["logind-dropin-order"]
    assert f"{later} sets InhibitDelayMaxSec=5 after ours" in problem
    assert rig.metric("kubelet_companion_logind_inhibit_delay_too_short") == 1  # logind agrees
    await rig.wait_for_lock()


def rig_dropin_elsewhere(logind_harness: LogindHarness) -> Path:
    """A drop-in path logind does not read (the harness workdir, not logind.conf.d)."""
    return logind_harness.workdir / "not-read" / "99-zz-kubelet-companion.conf"


async def test_kubelet_holding_a_lock_too_is_warned_about_once(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """When kubelet also holds a shutdown inhibitor, the agent warns once (not per check)."""
    kubelet_lock = await take_kubelet_lock(logind_harness)
    try:
        with structlog.testing.capture_logs() as logs:
            rig: ShutdownRig = await rig_factory(buckets=[(0, 3)], cluster=False)
            await rig.wait_for_lock()
            await asyncio.to_thread(logind_harness.restart_logind, True)
            # The check after the restart lists kubelet's lock again; only then count.
            await until(
                lambda: any("survived the logind restart" in e["event"] for e in logs),
                5,
                "the agent's check of its lock after the restart",
            )
        warnings = [e for e in logs if "two shutdown managers" in e["event"]]
        assert len(warnings) == 1
    finally:
        kubelet_lock()


async def take_kubelet_lock(logind_harness: LogindHarness) -> Callable[[], None]:
    """Hold a delay lock named like kubelet's, from a connection of the test's own."""
    bus = await MessageBus(
        bus_type=BusType.SYSTEM, bus_address=logind_harness.bus_address, negotiate_unix_fd=True
    ).connect()
    reply = await bus.call(
        Message(
            destination="org.freedesktop.login1",
            path="/org/freedesktop/login1",
            interface="org.freedesktop.login1.Manager",
            member="Inhibit",
            signature="ssss",
            body=["shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay"],
        )
    )
    assert reply is not None
    fd = reply.unix_fds[reply.body[0]]

    def release() -> None:
        os.close(fd)
        bus.disconnect()

    return release


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 10}], indirect=True)
async def test_agent_started_after_the_signal_still_runs_the_shutdown(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """An agent started while logind already prepares for shutdown runs the shutdown."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    other_lock = await take_kubelet_lock(logind_harness)
    try:
        rig: ShutdownRig = await rig_factory(
            buckets=[(0, 3)], pods=[pod("web", grace_seconds=1)], time_scale=0.2, start=False
        )
        await asyncio.to_thread(logind_harness.power_off)
        await logind_harness.wait_for_prepare_for_shutdown_async(True, timeout=5)
        rig.tasks.append(asyncio.create_task(rig.controller.run()))
        await until(rig.pod_deletions, 5, "the pod deletion")
        await until(lambda: rig.state()["status"] == "finished", 5, "the finished record")
        assert rig.has_taint()
    finally:
        other_lock()


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 10}], indirect=True)
async def test_dropped_bus_connection_is_restored_and_the_lock_kept(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A dropped bus connection is restored, the listed lock kept, signals heard again."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 2)], pods=[pod("web", grace_seconds=1)], time_scale=0.2
    )
    await rig.wait_for_lock()
    (before,) = await rig.our_locks()
    session = rig.controller.logind.session
    old_bus = session.bus
    assert old_bus is not None
    with structlog.testing.capture_logs() as logs:
        old_bus.disconnect()
        await until(
            lambda: session.bus is not None and session.bus is not old_bus, 5, "a new connection"
        )
        await until(
            lambda: any(e["event"] == "connected to the system bus" for e in logs),
            5,
            "the reconnect to be handled",
        )
        await rig.bus_events_handled(logs)  # anything the reconnect caused has happened now
    assert await rig.our_locks() == [before]
    assert not [e for e in logs if e["event"] == "shutdown delay lock taken"]
    assert rig.health.readiness().checks["logind-lock"] is True

    await rig.power_off()
    await until(rig.pod_deletions, 5, "the deletion after the reconnect")
