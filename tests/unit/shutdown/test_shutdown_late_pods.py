"""Pods that reach the agent's cache after their phase was planned are still stopped, in order.

A watch delivers with some delay, and a pod may reach NodeState after the phase it belongs
to started (or even ended). The run plans a phase again before it ends early, and plans
each phase with the pods of earlier phases that no phase has told to stop yet.
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
from tests.harness import kubeobjects


def pod(name: str, priority: int) -> dict[str, Any]:
    """A Running pod of ``priority`` with 30 s of grace, uid ``<name>-uid``."""
    return kubeobjects.pod(
        name, uid=f"{name}-uid", priority=priority, grace_seconds=30, phase="Running"
    )


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

    async def patch(self, resource: Any, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        return {}

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        self.deleted.append(name)
        self.on_delete(name)
        self.state.drop(name)
        return {}


def run_for(
    tmp_path: Path, state: LiveNodeState, kube: KubeletKube, record: ShutdownRecord
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
        metrics=ShutdownMetrics(CollectorRegistry()),
        release=lambda: True,
        clock=SystemClock(),
        include_daemon_set_pods=False,
        detach=lambda coroutine: asyncio.get_running_loop().create_task(coroutine),
        resumed=True,  # the record needs no first save here
    )


def two_phases() -> ShutdownRecord:
    return begin_record(
        (PriorityBucket(0, 20), PriorityBucket(1000, 20)),
        start_time=time.time(),
        start_monotonic=SystemClock().monotonic(),
        boot_id="b",
        mode="delete",
    )


async def test_a_pod_reaching_the_cache_during_its_phase_joins_it_before_the_next_starts(
    tmp_path: Path,
) -> None:
    """A phase-0 pod seen only once phase 0 runs is stopped, and waited for, in phase 0."""
    state = LiveNodeState([pod("first", 0), pod("high", 1000)])
    kube = KubeletKube(state, lambda name: state.put(pod("late", 0)) if name == "first" else None)
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
    state = LiveNodeState([pod("first", 0), pod("high", 1000)])
    kube = KubeletKube(state, lambda name: state.put(pod("late", 0)) if name == "high" else None)
    finished = await asyncio.wait_for(run_for(tmp_path, state, kube, two_phases()).start(), 10)
    assert kube.deleted == ["first", "high", "late"]
    assert [(p.status.value, p.pods) for p in finished.phases] == [("done", 1), ("done", 2)]
