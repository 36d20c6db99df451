"""The controller with simple doubles: what it writes, emits and records for each evaluation."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.kube.errors import Conflict, Unavailable
from agent.kube.events import ObjectRef
from agent.kube.patches import Builder, check_ownership, has_taint
from agent.readiness.controller import ReadinessController
from agent.readiness.gate import Mode
from agent.readiness.inputs import Snapshot
from agent.readiness.metrics import ReadinessMetrics
from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION
from agent.readiness.settings import GateSettings
from tests.harness.clock import HandClock
from tests.harness.readiness_objects import GATE, KEYS, daemon_set, node, pod, taint
from tests.harness.waiting import wait_until

JSON = dict[str, Any]
HOLD = 30.0


class FakeInputs:
    def __init__(self, the_node: JSON | None, pods: list[JSON], daemon_sets: list[JSON]) -> None:
        self.node = the_node
        self.pods = pods
        self.daemon_sets = daemon_sets
        self.listeners: list[Callable[[str, JSON | None], None]] = []
        self.node_listeners: list[Callable[[str, JSON | None], None]] = []

    async def wait_synced(self) -> None:
        return None

    def snapshot(self) -> Snapshot:
        return Snapshot(copy.deepcopy(self.node), list(self.pods), list(self.daemon_sets), None)

    def subscribe(self, listener: Callable[[str, JSON | None], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def subscribe_node(self, listener: Callable[[str, JSON | None], None]) -> Callable[[], None]:
        self.node_listeners.append(listener)
        return lambda: self.node_listeners.remove(listener)

    def fire(self, kind: str = "MODIFIED", obj: JSON | None = None) -> None:
        for listener in list(self.listeners):
            listener(kind, obj)


def _apply(current: JSON, ops: list[JSON]) -> JSON:
    result = copy.deepcopy(current)
    for op in ops:
        path = op["path"]
        if path == "/metadata/resourceVersion":
            continue
        if path == "/spec/taints":
            result.setdefault("spec", {})["taints"] = op["value"]
        elif path == "/metadata/annotations":
            result["metadata"]["annotations"] = dict(op["value"])
        elif path.startswith("/metadata/annotations/"):
            key = path.split("/", 3)[3].replace("~1", "/").replace("~0", "~")
            result["metadata"].setdefault("annotations", {})[key] = op["value"]
        else:
            raise AssertionError(f"unexpected path {path}")
    result["metadata"]["resourceVersion"] = str(int(result["metadata"]["resourceVersion"]) + 1)
    return result


class FakeWriter:
    """Applies builders to a server-side Node, with the resourceVersion guard and retries."""

    def __init__(self, server_node: JSON) -> None:
        self.server = copy.deepcopy(server_node)
        self.writes: list[tuple[str, list[JSON]]] = []
        self.written = asyncio.Event()
        self.failures = 0

    async def update(
        self,
        build: Builder,
        *,
        what: str,
        node: JSON | None = None,
        deadline: float | None = None,  # noqa: ARG002 - NodeWriter's signature
    ) -> JSON | None:
        if self.failures:
            self.failures -= 1
            raise Unavailable("the API server is down")
        current = copy.deepcopy(node) if node is not None else copy.deepcopy(self.server)
        for _ in range(5):
            ops = build(current)
            if not ops:
                return current
            check_ownership(current, ops, lambda key: key.startswith("kubelet-companion.io/"))
            if current["metadata"]["resourceVersion"] != self.server["metadata"]["resourceVersion"]:
                current = copy.deepcopy(self.server)  # the test op failed: re-read, rebuild
                continue
            self.server = _apply(self.server, ops)
            self.writes.append((what, ops))
            self.written.set()
            return copy.deepcopy(self.server)
        raise Conflict("too many conflicts")


class FakeEvents:
    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str]] = []

    async def emit(
        self,
        involved: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        *,
        min_interval: float = 0.0,  # noqa: ARG002 - EventSink's signature
    ) -> bool:
        assert involved.kind == "Node"
        self.posted.append((event_type, reason, message))
        return True

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.posted]


class Rig:
    def __init__(
        self,
        the_node: JSON | None,
        *,
        pods: list[JSON] | None = None,
        daemon_sets: list[JSON] | None = None,
        mode: Mode = "bootstrap-only",
    ) -> None:
        self.clock = HandClock()
        self.inputs = FakeInputs(the_node, pods or [], daemon_sets or [])
        self.writer = FakeWriter(the_node or node())
        self.events = FakeEvents()
        self.registry = CollectorRegistry()
        self.metrics = ReadinessMetrics(self.registry)
        self.controller = ReadinessController(
            node_name="node-1",
            settings=GateSettings(keys=KEYS, mode=mode, hold_time=HOLD, event_interval=60),
            inputs=self.inputs,
            writer=self.writer,
            events=self.events,
            metrics=self.metrics,
            clock=self.clock,
        )

    async def step(self) -> float:
        wake = await self.controller.step()
        await self.controller.drain_events()
        return wake

    def sync_cache(self) -> None:
        """Let the 'watch' deliver the server's Node (as the real Node watch would)."""
        self.inputs.node = copy.deepcopy(self.writer.server)
        for listener in self.inputs.node_listeners:
            listener("MODIFIED", copy.deepcopy(self.writer.server))

    def metric(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


async def test_a_node_with_nothing_critical_is_lifted_at_once() -> None:
    """No critical components: the first evaluation removes the gate and records completion."""
    rig = Rig(node())
    await rig.step()
    assert len(rig.writer.writes) == 1
    assert not has_taint(rig.writer.server, GATE)
    assert BOOTSTRAP_COMPLETED_ANNOTATION in rig.writer.server["metadata"]["annotations"]
    assert rig.events.reasons() == ["NodeCriticalComponentsReady"]
    assert rig.metric("kubelet_companion_readiness_gate_held") == 0
    assert (
        rig.metric(
            "kubelet_companion_readiness_taint_operations_total",
            operation="remove",
            result="success",
        )
        == 1
    )
    assert rig.metric("kubelet_companion_readiness_gate_wait_seconds") == pytest.approx(
        rig.clock.now() - 1_735_689_600.0
    )


async def test_a_stale_cache_after_the_lift_causes_no_second_write() -> None:
    """Until the watch shows our write, the write's result is judged, not the stale cache."""
    rig = Rig(node())
    await rig.step()
    await rig.step()
    await rig.step()
    assert len(rig.writer.writes) == 1


async def test_unready_pods_hold_the_gate_and_warn_once_per_interval() -> None:
    """A failing check keeps the taint, posts its Warning, and repeats it only per interval."""
    ds = daemon_set("cni")
    rig = Rig(node(), daemon_sets=[ds], pods=[pod("dns", ready=False)])
    await rig.step()
    await rig.step()
    assert rig.writer.writes == []
    assert sorted(rig.events.reasons()) == [
        "UnreadyNodeCriticalPods",
        "UnscheduledNodeCriticalDaemonSets",
    ]
    assert rig.metric("kubelet_companion_readiness_gate_held") == 1
    assert rig.metric("kubelet_companion_readiness_missing", kind="pod") == 1
    assert rig.metric("kubelet_companion_readiness_missing", kind="daemonset") == 1
    rig.clock.t += 61
    await rig.step()
    assert len(rig.events.posted) == 4


async def test_ready_after_waiting_lifts_exactly_once() -> None:
    """Once the last pod turns Ready the taint goes in one write, and never again."""
    rig = Rig(node(), pods=[pod("dns", ready=False)])
    await rig.step()
    rig.inputs.pods = [pod("dns", ready=True)]
    await rig.step()
    rig.sync_cache()
    await rig.step()
    assert [what for what, _ in rig.writer.writes] == ["readiness remove"]


async def test_a_conflict_rebuilds_from_the_fresh_node_and_keeps_the_new_taint() -> None:
    """If the Node changed under us, the removal is rebuilt and the other taint survives."""
    rig = Rig(node())
    rig.writer.server["spec"]["taints"].append(taint("someone/else"))
    rig.writer.server["metadata"]["resourceVersion"] = "2"
    await rig.step()
    assert rig.writer.server["spec"]["taints"] == [taint("someone/else")]
    assert (
        rig.metric(
            "kubelet_companion_readiness_taint_operations_total",
            operation="remove",
            result="retried",
        )
        == 1
    )


async def test_a_failed_write_is_retried_after_a_backoff() -> None:
    """An API failure is counted, and the write is tried again once the backoff has passed."""
    rig = Rig(node())
    rig.writer.failures = 1
    wake = await rig.step()
    assert rig.writer.writes == []
    assert (
        rig.metric(
            "kubelet_companion_readiness_taint_operations_total", operation="remove", result="error"
        )
        == 1
    )
    assert wake < rig.clock.t + 60
    await rig.step()
    assert rig.writer.writes == []
    rig.clock.t = wake
    await rig.step()
    assert len(rig.writer.writes) == 1


async def test_a_failed_write_that_became_moot_never_wakes_the_loop_in_the_past() -> None:
    """A lift that failed, then a verdict that holds the gate after all: nothing is left to
    write, so the failed write's retry time (now past) is dropped and the next wake-up lies
    ahead; a past wake-up made the loop step again at once, forever, never yielding."""
    rig = Rig(node())
    rig.writer.failures = 1
    retry_at = await rig.step()
    assert rig.writer.writes == []
    rig.inputs.pods = [pod("dns", ready=False)]
    await rig.step()
    rig.clock.t = retry_at + 1
    wake = await rig.step()
    assert wake > rig.clock.t
    assert rig.writer.writes == []


async def test_the_loop_yields_to_other_tasks_when_a_step_is_due_at_once() -> None:
    """Even when every step asks to run again at once, ``run`` yields to the event loop
    between steps: another task still runs, and the controller can be cancelled."""
    rig = Rig(node())
    steps = 0

    async def due_at_once() -> float:
        nonlocal steps
        steps += 1
        return rig.clock.monotonic() - 1

    rig.controller.step = due_at_once  # type: ignore[method-assign]  # the loop alone, under test
    loop_task = asyncio.create_task(rig.controller.run())
    other = asyncio.create_task(asyncio.sleep(0, result="ran"))
    assert await asyncio.wait_for(other, timeout=5) == "ran"
    assert steps > 0
    loop_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop_task


async def test_bootstrap_only_never_readds() -> None:
    """After completion in bootstrap-only mode an unready pod never brings the taint back."""
    rig = Rig(node())
    await rig.step()
    rig.sync_cache()
    rig.inputs.pods = [pod("dns", ready=False)]
    for _ in range(3):
        rig.clock.t += 1000
        await rig.step()
    assert len(rig.writer.writes) == 1
    assert "UnreadyNodeCriticalPods" not in rig.events.reasons()


async def test_continuous_readds_after_the_hold_time_once() -> None:
    """In continuous mode the taint returns after holdTime of unreadiness, in one write."""
    rig = Rig(node(), mode="continuous")
    await rig.step()
    rig.sync_cache()
    rig.inputs.pods = [pod("dns", ready=False)]
    wake = await rig.step()
    assert wake == rig.clock.t + HOLD
    assert len(rig.writer.writes) == 1
    rig.clock.t = wake
    await rig.step()
    rig.sync_cache()
    for _ in range(3):
        rig.clock.t += HOLD
        await rig.step()
    assert [what for what, _ in rig.writer.writes] == ["readiness remove", "readiness add"]
    assert has_taint(rig.writer.server, GATE)
    assert "NodeCriticalComponentsNotReady" in rig.events.reasons()


async def test_an_untainted_fresh_node_is_only_marked_completed() -> None:
    """A node registered without the taint gets the completion mark and no taint."""
    rig = Rig(node(taints=[]))
    await rig.step()
    assert [what for what, _ in rig.writer.writes] == ["readiness mark-completed"]
    assert not has_taint(rig.writer.server, GATE)


async def test_intolerant_daemonsets_are_reported_while_the_gate_is_held() -> None:
    """A DaemonSet that cannot tolerate the gate gets a Warning even as the gate opens."""
    rig = Rig(node(), daemon_sets=[daemon_set("picky", tolerations=[])])
    await rig.step()
    assert "IntolerantNodeCriticalDaemonSets" in rig.events.reasons()
    assert rig.metric("kubelet_companion_readiness_intolerant_daemonsets") == 1
    assert len(rig.writer.writes) == 1


async def test_a_missing_node_is_waited_for() -> None:
    """Without our Node object nothing is written and the gate reads as not held."""
    rig = Rig(None)
    await rig.step()
    assert rig.writer.writes == []
    assert rig.metric("kubelet_companion_readiness_gate_held") == 0


async def test_the_loop_reacts_to_an_event_without_polling() -> None:
    """A watch event wakes the loop, which evaluates at once (resync is far away)."""
    rig = Rig(node(), pods=[pod("dns", ready=False)])
    task = asyncio.create_task(rig.controller.run())
    try:
        await wait_until(lambda: rig.controller.last_assessment is not None, "a first assessment")
        assert rig.writer.writes == []
        first = rig.controller.last_assessment
        # The loop parks on its clock, which only the test moves: nothing but an event can
        # wake it now, so what it evaluated is final until one comes.
        await wait_until(lambda: rig.clock.sleeping, "the loop to wait on its clock")
        assert rig.controller.last_assessment is first, "no event, no evaluation"
        rig.inputs.pods = [pod("dns", ready=True)]
        rig.inputs.fire()
        async with asyncio.timeout(5):
            await rig.writer.written.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert rig.inputs.listeners == []
