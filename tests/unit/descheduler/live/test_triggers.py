"""Event-driven cycles: which cache events trigger, how soon a cycle starts, and its spacing."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.live.loop import until_next_cycle
from agent.descheduler.live.triggers import (
    ADDON_UNSCHEDULABLE,
    NODE_READY,
    UTILIZATION,
    AddonWatch,
    CycleSchedule,
    NodeReadyWatch,
    UtilizationWatch,
    utilization_class,
)
from agent.descheduler.model.cluster import NodeInfo
from agent.descheduler.model.keys import UNSCHEDULABLE_SINCE
from agent.kube.nodereports import NodeUsageReport
from tests.harness.clock import HandClock
from tests.harness.deschedulerstate import pod
from tests.harness.waiting import wait_until


def _node(name: str, *, ready: bool) -> NodeInfo:
    return NodeInfo(
        name=name, uid=name, labels={}, taints=(), allocatable={}, unschedulable=False, ready=ready
    )


def _report(node: str, cpu: float, memory: int) -> NodeUsageReport:
    return NodeUsageReport(
        node=node,
        observed_time=0.0,
        heartbeat_seconds=60.0,
        cpu_cores=cpu,
        memory_bytes=memory,
        swap_bytes=0,
        cpu_capacity=4.0,
        memory_capacity=1000,
        swap_capacity=0,
        cpu_allocatable=None,
        memory_allocatable=None,
        gate_held=False,
        waiting_for=(),
        shutdown="none",
        shutdown_start=None,
        budget_end=None,
        agent_stopped=False,
        pods=(),
    )


class TestCycleSchedule:
    def test_interval_only(self) -> None:
        """Without a trigger the next cycle is one interval after the last start."""
        schedule = CycleSchedule(interval=300, min_spacing=30)
        schedule.started(1000)
        assert schedule.next_start() == 1300

    def test_trigger_after_the_spacing_starts_at_once(self) -> None:
        """A trigger long after the last start asks for a cycle right away."""
        schedule = CycleSchedule(interval=300, min_spacing=30)
        schedule.started(1000)
        schedule.fire(NODE_READY, 1100)
        assert schedule.next_start() == 1100

    def test_trigger_within_the_spacing_waits_for_it(self) -> None:
        """A trigger right after a cycle waits until the minimum spacing has passed."""
        schedule = CycleSchedule(interval=300, min_spacing=30)
        schedule.started(1000)
        schedule.fire(NODE_READY, 1005)
        assert schedule.next_start() == 1030

    def test_the_earliest_ask_wins(self) -> None:
        """An ask for later does not delay an earlier one; an earlier one moves it forward."""
        schedule = CycleSchedule(interval=300, min_spacing=30)
        schedule.started(1000)
        schedule.fire(ADDON_UNSCHEDULABLE, 1100)
        schedule.fire(NODE_READY, 1080)
        schedule.fire(UTILIZATION, 1090)
        assert (schedule.trigger, schedule.next_start()) == (NODE_READY, 1080)

    def test_a_cycle_serves_every_trigger_before_it(self) -> None:
        """Triggers collapse: after the cycle that served them, only the interval is due."""
        schedule = CycleSchedule(interval=300, min_spacing=30)
        schedule.fire(NODE_READY, 1000)
        schedule.fire(UTILIZATION, 1001)
        assert schedule.trigger == NODE_READY
        schedule.started(1002)
        assert schedule.next_start() == 1302

    def test_no_interval_waits_for_a_trigger(self) -> None:
        """Event-driven with no interval: nothing is due until something fires."""
        schedule = CycleSchedule(interval=0, min_spacing=30)
        schedule.started(1000)
        assert schedule.next_start() is None


class TestWatches:
    def test_node_becoming_ready_fires(self) -> None:
        """NotReady -> Ready, and a new Ready node, trigger; the initial list does not."""
        fired: list[str] = []
        watch = NodeReadyWatch(lambda reason, _delay: fired.append(reason))
        watch.on_event("SYNCED", None, {"a": _node("a", ready=False), "b": _node("b", ready=True)})
        watch.on_event("MODIFIED", _node("b", ready=True), {})
        assert fired == []
        watch.on_event("MODIFIED", _node("a", ready=True), {})
        watch.on_event("ADDED", _node("c", ready=True), {})
        assert fired == [NODE_READY, NODE_READY]

    def test_node_going_not_ready_does_not_fire(self) -> None:
        """Losing a node is no new room: no trigger."""
        fired: list[str] = []
        watch = NodeReadyWatch(lambda reason, _delay: fired.append(reason))
        watch.on_event("SYNCED", None, {"a": _node("a", ready=True)})
        watch.on_event("MODIFIED", _node("a", ready=False), {})
        assert fired == []

    @pytest.mark.parametrize(
        ("cpu", "memory", "expected"),
        [
            pytest.param(0.4, 100, "low", id="under-every-threshold"),
            pytest.param(0.4, 500, "normal", id="memory-between"),
            pytest.param(3.6, 100, "high", id="cpu-over-target"),
        ],
    )
    def test_utilization_class(self, cpu: float, memory: int, expected: str) -> None:
        """A report is low under every threshold, high over any target, else normal."""
        assert (
            utilization_class(
                _report("a", cpu, memory), {"cpu": 20, "memory": 20}, {"cpu": 80, "memory": 80}
            )
            == expected
        )

    def test_crossing_a_threshold_fires_once(self) -> None:
        """A report that changes class triggers; one that stays in its class does not."""
        fired: list[str] = []
        watch = UtilizationWatch(
            lambda reason, _delay: fired.append(reason),
            {"cpu": 20, "memory": 20},
            {"cpu": 80, "memory": 80},
        )
        watch.on_report("SYNCED", _report("a", 2.0, 500))
        watch.on_report("MODIFIED", _report("a", 2.2, 520))
        assert fired == []
        watch.on_report("MODIFIED", _report("a", 3.9, 520))
        assert fired == [UTILIZATION]

    def test_addon_going_unschedulable_fires_once(self) -> None:
        """A critical pod newly Unschedulable asks for a cycle when the rescue may act on it;
        the same pod again does not ask again."""
        fired: list[tuple[str, float]] = []
        watch = AddonWatch(
            lambda reason, delay: fired.append((reason, delay)),
            lambda p: p.namespace == "kube-system",
            lambda _pod: 45.0,
        )
        pending = project_pod(pod("dns", "", namespace="kube-system", phase="Pending"))
        waiting = msgspec.structs.replace(pending, extra={UNSCHEDULABLE_SINCE: 1.0})
        watch.on_event(
            "ADDED",
            pending,
        )
        watch.on_event("MODIFIED", waiting)
        watch.on_event("MODIFIED", waiting)
        assert fired == [(ADDON_UNSCHEDULABLE, 45.0)]


async def _no_rescues() -> bool:
    return False


async def test_triggered_cycle_starts_within_two_seconds_and_respects_the_spacing() -> None:
    """On the fake clock: a trigger starts a cycle within 2 s; the next waits the spacing."""
    clock = HandClock()
    schedule = CycleSchedule(interval=600, min_spacing=30)
    wake = asyncio.Event()
    starts: list[float] = []

    async def loop() -> None:
        while True:
            schedule.started(clock.monotonic())
            starts.append(clock.monotonic())
            await until_next_cycle(schedule, _no_rescues, clock, wake)

    def fire() -> float:
        schedule.fire(NODE_READY, clock.monotonic())
        wake.set()
        return clock.monotonic()

    task = asyncio.create_task(loop())
    try:
        await wait_until(lambda: len(starts) == 1)
        clock.advance(100)
        fired = fire()
        await wait_until(lambda: len(starts) == 2)
        assert starts[1] - fired <= 2
        clock.advance(1)
        fire()
        # Fake time a second at a time.
        await wait_until(lambda: len(starts) == 3, "the third cycle", each=lambda: clock.advance(1))
        assert 30 <= starts[2] - starts[1] <= 31
    finally:
        task.cancel()
