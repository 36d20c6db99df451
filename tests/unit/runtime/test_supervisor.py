"""Supervised root tasks: restart on crash, staged stop, fatal exit for critical tasks.

Restart waits run on a ``SteppingClock``: each sleep moves fake time at once and is
recorded, so the tests see the backoff without waiting for it.
"""

import asyncio

import pytest

from agent.runtime.supervisor import FatalTaskError, RootTask, Supervisor
from agent.telemetry.health import Health
from tests.harness.clock import HandClock


class SteppingClock(HandClock):
    """A hand clock whose every sleep advances it by its own length at once, and is logged."""

    def __init__(self) -> None:
        super().__init__()
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)


async def test_a_crashing_task_is_restarted() -> None:
    """A task that raises is logged and started again."""
    runs = []
    stop = asyncio.Event()

    async def flaky() -> None:
        runs.append(1)
        if len(runs) < 3:
            raise RuntimeError("boom")
        stop.set()
        await asyncio.Event().wait()

    clock = SteppingClock()
    supervisor = Supervisor(Health(), stop_timeout=1, clock=clock)
    supervisor.add(RootTask("flaky", flaky, max_restarts=5))
    async with asyncio.timeout(10):
        await supervisor.run(stop)
    assert len(runs) == 3
    assert clock.slept == [0.5, 1.0]


async def test_restart_waits_double_from_half_a_second_up_to_thirty() -> None:
    """Restart n waits 0.5 s * 2**(n-1), capped at 30 s, with no jitter, on the given clock."""

    async def broken() -> None:
        raise RuntimeError("always")

    clock = SteppingClock()
    supervisor = Supervisor(Health(), stop_timeout=1, clock=clock)
    supervisor.add(RootTask("broken", broken, critical=True, max_restarts=9))
    with pytest.raises(FatalTaskError, match="broken"):
        async with asyncio.timeout(10):
            await supervisor.run(asyncio.Event())
    assert clock.slept == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


async def test_controllers_stop_before_watches() -> None:
    """Stage 2 (controllers) is stopped and cancelled before stage 1 (watches)."""
    order = []
    stop = asyncio.Event()

    def forever(name: str):  # type: ignore[no-untyped-def]
        async def run() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                order.append(name)

        return run

    supervisor = Supervisor(Health(), stop_timeout=1)
    supervisor.add(RootTask("watch", forever("watch"), stage=1))
    supervisor.add(RootTask("controller", forever("controller"), stage=2))
    asyncio.get_running_loop().call_later(0.05, stop.set)
    async with asyncio.timeout(10):
        await supervisor.run(stop)
    assert order == ["controller", "watch"]


async def test_graceful_stop_hook_runs_first() -> None:
    """A task's stop hook is awaited before the task is cancelled."""
    events = []
    stop = asyncio.Event()
    finished = asyncio.Event()

    async def run() -> None:
        await finished.wait()
        events.append("finished")

    async def graceful() -> None:
        events.append("stop-hook")
        finished.set()
        await asyncio.sleep(0.01)  # a hook that takes a moment; the order below is causal

    supervisor = Supervisor(Health(), stop_timeout=1)
    supervisor.add(RootTask("c", run, stop=graceful))
    asyncio.get_running_loop().call_later(0.02, stop.set)
    async with asyncio.timeout(10):
        await supervisor.run(stop)
    assert events == ["stop-hook", "finished"]


async def test_a_critical_task_that_keeps_failing_is_fatal() -> None:
    """After max_restarts a critical task fails health and the run raises."""
    health = Health()

    async def broken() -> None:
        raise RuntimeError("always")

    clock = SteppingClock()
    supervisor = Supervisor(health, stop_timeout=1, clock=clock)
    supervisor.add(RootTask("broken", broken, critical=True, max_restarts=1))
    with pytest.raises(FatalTaskError, match="broken"):
        async with asyncio.timeout(10):
            await supervisor.run(asyncio.Event())
    assert not health.liveness().ok
    assert clock.slept == [0.5]


def test_health_readiness_needs_every_expected_check() -> None:
    """/readyz is ok only when every declared condition is true; degraded is separate."""
    health = Health()
    health.expect("watch:pods")
    health.expect("node-facts")
    health.set_ready("node-facts")
    assert not health.readiness().ok
    health.set_ready("watch:pods")
    assert health.readiness().ok
    health.set_degraded("logind", "delay not raised")
    assert health.readiness().ok
    assert health.degraded() == {"logind": "delay not raised"}


async def test_failures_after_a_healthy_run_do_not_add_up() -> None:
    """A task that crashes only after running a while is restarted for ever, not given up."""
    runs = []
    stop = asyncio.Event()
    clock = SteppingClock()

    async def crashes_after_a_while() -> None:
        runs.append(1)
        if len(runs) > 4:
            stop.set()
            await asyncio.Event().wait()
        await clock.sleep(60.0)
        raise RuntimeError("late crash")

    health = Health()
    supervisor = Supervisor(health, stop_timeout=1, clock=clock)
    supervisor.add(RootTask("late", crashes_after_a_while, max_restarts=1, healthy_after=60.0))
    async with asyncio.timeout(20):
        await supervisor.run(stop)
    assert len(runs) == 5
    assert health.liveness().ok
    assert clock.slept == [60.0, 0.5] * 4  # each restart is a first one again
