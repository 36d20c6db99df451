"""Pods that reach the agent's cache after their phase was planned are still stopped, in order.

A watch delivers with some delay, and a pod may be bound to the node during the shutdown
(before the scheduler saw the taint, or tolerating it): either way it reaches NodeState
after the phase it belongs to started (or even ended). A running phase takes such pods in
as NodeState shows them, and plans itself again before it ends early; each phase is planned
with the pods of earlier phases that no phase has told to stop yet. Each pod's result is
counted under its own bucket's priority, whichever phase stopped it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config.shutdown import PriorityBucket
from agent.kube.events import ObjectRef
from agent.shutdown.deadlines import Deadlines
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.record import ShutdownRecord, begin_record
from agent.shutdown.run import ClusterAccess, ShutdownRun
from agent.shutdown.store import RecordStore
from tests.harness.shutdownpods import pod


class LiveNodeState:
    """A synced NodeState with a live pod watch, changed by the test and by deletes."""

    pods_synced = pods_live = True

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = {f"default/{p['metadata']['name']}": p for p in pods}
        self.version = 0
        self._changed = asyncio.Event()

    def pod_list(self) -> list[dict[str, Any]]:
        return list(self.pods.values())

    def put(self, obj: dict[str, Any]) -> None:
        self.pods[f"default/{obj['metadata']['name']}"] = obj
        self._bump()

    def drop(self, name: str) -> None:
        self.pods.pop(f"default/{name}", None)
        self._bump()

    def _bump(self) -> None:
        self.version += 1
        self._changed.set()

    async def wait_changed(self, since: int, timeout: float | None = None) -> int:
        while self.version == since:
            self._changed.clear()
            try:
                async with asyncio.timeout(timeout):
                    await self._changed.wait()
            except TimeoutError:
                break
        return self.version


class KubeletKube:
    """Deletes are answered at once, and the pod leaves NodeState (as the watch would
    show); ``on_delete`` lets a test make something else happen at that moment."""

    def __init__(self, state: LiveNodeState, on_delete: Callable[[str], None]) -> None:
        self.state = state
        self.on_delete = on_delete
        self.deleted: list[str] = []
        self.grace: dict[str, int] = {}

    async def patch(self, resource: Any, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        return {}

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        self.deleted.append(name)
        self.grace[name] = kwargs["grace_period_seconds"]
        self.on_delete(name)
        self.state.drop(name)
        return {}


def run_for(
    tmp_path: Path,
    state: LiveNodeState,
    kube: KubeletKube,
    record: ShutdownRecord,
    registry: CollectorRegistry | None = None,
) -> ShutdownRun:
    start = record.start_monotonic
    return ShutdownRun(
        record=record,
        deadlines=Deadlines(start=start, phase_ends=(start + 20, start + 40)),
        cluster=ClusterAccess(
            node_state=state,  # type: ignore[arg-type]
            kube=kube,
            taint=None,  # type: ignore[arg-type]  # the controller's, not the run's
            events=None,  # type: ignore[arg-type]
            node_ref=ObjectRef.node("node-1"),
        ),
        store=RecordStore(tmp_path / "state.json"),
        metrics=ShutdownMetrics(registry or CollectorRegistry()),
        release=lambda: True,
        clock=SystemClock(),
        include_daemon_set_pods=False,
        detach=lambda coroutine: asyncio.get_running_loop().create_task(coroutine),
        resumed=True,  # the record needs no first save here
    )


def two_phases(second_seconds: int = 20) -> ShutdownRecord:
    return begin_record(
        (PriorityBucket(0, 20), PriorityBucket(1000, second_seconds)),
        start_time=time.time(),
        start_monotonic=SystemClock().monotonic(),
        boot_id="b",
        mode="delete",
    )


async def test_a_pod_reaching_the_cache_during_its_phase_joins_it_before_the_next_starts(
    tmp_path: Path,
) -> None:
    """A phase-0 pod seen only once phase 0 runs is stopped, and waited for, in phase 0."""
    state = LiveNodeState([pod("first", priority=0), pod("high", priority=1000)])
    kube = KubeletKube(
        state, lambda name: state.put(pod("late", priority=0)) if name == "first" else None
    )
    finished = await asyncio.wait_for(run_for(tmp_path, state, kube, two_phases()).start(), 10)
    assert kube.deleted == ["first", "late", "high"]
    assert [(p.status.value, p.pods, p.terminated) for p in finished.phases] == [
        ("done", 2, 2),
        ("done", 1, 1),
    ]


async def test_a_pod_of_an_ended_phase_reaching_the_cache_late_is_stopped_with_the_next(
    tmp_path: Path,
) -> None:
    """A phase-0 pod seen only once phase 1 runs joins phase 1: no pod is left running."""
    state = LiveNodeState([pod("first", priority=0), pod("high", priority=1000)])
    kube = KubeletKube(
        state, lambda name: state.put(pod("late", priority=0)) if name == "high" else None
    )
    finished = await asyncio.wait_for(run_for(tmp_path, state, kube, two_phases()).start(), 10)
    assert kube.deleted == ["first", "high", "late"]
    assert [(p.status.value, p.pods) for p in finished.phases] == [("done", 1), ("done", 2)]


def counted(registry: CollectorRegistry, metric: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"kubelet_companion_shutdown_{metric}_total", labels)


async def test_a_late_pod_stopped_by_a_later_phase_counts_under_its_own_bucket(
    tmp_path: Path,
) -> None:
    """A priority-0 pod that arrives while the priority-1000 phase runs is stopped there,
    with that phase's grace at most, and counted (gone, late) under priority 0."""
    state = LiveNodeState([pod("first", priority=0), pod("high", priority=1000)])
    kube = KubeletKube(
        state, lambda name: state.put(pod("late", priority=0)) if name == "high" else None
    )
    registry = CollectorRegistry()
    record = two_phases(second_seconds=7)
    start = record.start_monotonic
    assert start is not None
    run = run_for(tmp_path, state, kube, record, registry)
    run.deadlines = Deadlines(start=start, phase_ends=(start + 20, start + 27))
    finished = await asyncio.wait_for(run.start(), 10)
    assert [(p.priority, p.pods) for p in finished.phases] == [(0, 1), (1000, 2)]
    assert kube.grace == {"first": 20, "high": 7, "late": 7}  # 30 s of its own, capped at 7
    assert counted(registry, "pods_terminated", priority="0", result="gone") == 2
    assert counted(registry, "pods_terminated", priority="1000", result="gone") == 1
    assert counted(registry, "pods_arrived_late", priority="0") == 1
    assert counted(registry, "pods_arrived_late", priority="1000") is None


async def test_a_pod_of_a_later_phase_arriving_early_waits_for_its_own_phase(
    tmp_path: Path,
) -> None:
    """A priority-1000 pod that arrives while phase 0 runs is not stopped before phase 0 is
    over: it joins its own phase, and is counted there as a late arrival."""
    state = LiveNodeState([pod("first", priority=0), pod("high", priority=1000)])
    kube = KubeletKube(
        state, lambda name: state.put(pod("new", priority=1000)) if name == "first" else None
    )
    registry = CollectorRegistry()
    finished = await asyncio.wait_for(
        run_for(tmp_path, state, kube, two_phases(), registry).start(), 10
    )
    assert kube.deleted[0] == "first"
    assert sorted(kube.deleted[1:]) == ["high", "new"]
    assert [(p.priority, p.pods) for p in finished.phases] == [(0, 1), (1000, 2)]
    assert counted(registry, "pods_terminated", priority="1000", result="gone") == 2
    assert counted(registry, "pods_arrived_late", priority="1000") == 1
