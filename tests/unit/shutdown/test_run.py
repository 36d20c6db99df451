"""One shutdown run with doubles for the cluster: the watchdog's clock, late phases."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
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
from tests.harness.waiting import wait_until

CRITICAL = 2_000_000_000


class OffsetClock(SystemClock):
    """Monotonic time on another epoch than ``time.monotonic``, as an injected clock may be."""

    def monotonic(self) -> float:
        return time.monotonic() + 10_000.0


class NodeStateDouble:
    """NodeState as the run reads it: synced (with pods) or never synced."""

    def __init__(self, pods: list[dict[str, Any]] | None = None) -> None:
        self.synced = pods is not None
        self.pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods or []}
        self.version = 0
        self.pods_synced = self.pods_live = self.synced
        self.waits = 0
        """How often the run began to wait for a sync or a list: it is inside its phase."""

    async def wait_synced(self) -> None:
        self.waits += 1
        await asyncio.Event().wait()

    async def relist_pods(self, timeout: float) -> None:  # noqa: ARG002 - NodeState's signature
        """Never synced means the API server never answers: the list hangs too."""
        self.waits += 1
        await asyncio.Event().wait()

    def pod_list(self) -> list[dict[str, Any]]:
        return list(self.pods.values())


class HangingKube:
    """Records deletes and status patches; each then hangs, as if the API server never answered."""

    def __init__(self) -> None:
        self.deletes: list[tuple[str, int]] = []
        self.status_patches: list[str] = []

    async def patch(self, resource: Any, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        self.status_patches.append(name)
        await asyncio.Event().wait()
        return {}  # pragma: no cover - never reached

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        self.deletes.append((name, kwargs["grace_period_seconds"]))
        await asyncio.Event().wait()
        return {}  # pragma: no cover - never reached


class Releases:
    """The lock's release, noting which thread called it."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.done = threading.Event()

    def __call__(self) -> bool:
        self.threads.append(threading.current_thread().name)
        first = not self.done.is_set()
        self.done.set()
        return first


def build_run(
    tmp_path: Path,
    record: ShutdownRecord,
    deadlines: Deadlines,
    *,
    state: NodeStateDouble,
    kube: HangingKube,
    release: Releases,
    clock: SystemClock,
) -> tuple[ShutdownRun, list[asyncio.Task[object]]]:
    detached: list[asyncio.Task[object]] = []

    def detach(coroutine: Coroutine[object, object, object]) -> asyncio.Task[object]:
        task = asyncio.get_running_loop().create_task(coroutine)
        detached.append(task)
        return task

    run = ShutdownRun(
        record=record,
        deadlines=deadlines,
        cluster=ClusterAccess(
            node_state=state,  # type: ignore[arg-type]
            kube=kube,
            taint=None,  # type: ignore[arg-type]  # the controller's, not the run's
            events=None,  # type: ignore[arg-type]
            node_ref=ObjectRef.node("node-1"),
        ),
        store=RecordStore(tmp_path / "state.json"),
        metrics=ShutdownMetrics(CollectorRegistry()),
        release=release,
        clock=clock,
        include_daemon_set_pods=False,
        detach=detach,
        resumed=True,  # the record needs no first save here
    )
    return run, detached


async def test_watchdog_reads_the_clock_the_deadlines_are_on(tmp_path: Path) -> None:
    """With the loop blocked, the watchdog fires at the budget on the run's own clock."""
    clock = OffsetClock()
    start = clock.monotonic()
    record = begin_record(
        (PriorityBucket(0, 1),),
        start_time=time.time(),
        start_monotonic=start,
        boot_id="b",
        mode="delete",
    )
    release = Releases()
    state = NodeStateDouble(None)  # the phase waits for a sync that never comes
    run, _ = build_run(
        tmp_path,
        record,
        Deadlines(start=start, phase_ends=(start + 0.2,)),
        state=state,
        kube=HangingKube(),
        release=release,
        clock=clock,
    )
    task = run.start()
    await wait_until(lambda: state.waits, "the run to wait inside its phase")
    assert release.done.wait(5)  # the loop is blocked here; only the watchdog can release
    finished = await asyncio.wait_for(task, 5)
    assert release.threads[0] == "shutdown-watchdog"
    assert finished.status.value == "finished"


async def test_phases_past_their_deadline_still_send_deletes_without_holding_the_lock(
    tmp_path: Path,
) -> None:
    """Phases whose deadline passed get their deletes (grace 1 s for 0 s); none holds the lock."""
    clock = SystemClock()
    now = clock.monotonic()
    record = begin_record(
        (PriorityBucket(0, 2), PriorityBucket(CRITICAL, 0)),
        start_time=time.time() - 5,
        start_monotonic=now - 5,
        boot_id="b",
        mode="evict",
    )
    kube, release = HangingKube(), Releases()
    run, detached = build_run(
        tmp_path,
        record,
        Deadlines(start=now - 5, phase_ends=(now - 3, now - 3)),
        state=NodeStateDouble([pod("web", priority=0), pod("crit", priority=CRITICAL)]),
        kube=kube,
        release=release,
        clock=clock,
    )
    finished = await asyncio.wait_for(run.start(), 5)
    assert sorted(kube.deletes) == [("crit", 1), ("web", 2)]  # deletes even in evict mode
    assert sorted(kube.status_patches) == ["crit", "web"]  # marked, and never waited for
    assert release.done.is_set()
    assert [(p.status.value, p.pods) for p in finished.phases] == [
        ("timed-out", 1),
        ("timed-out", 1),
    ]
    assert detached
    assert not any(task.done() for task in detached)  # still in flight after the release
    for task in detached:
        task.cancel()


async def test_a_run_halted_before_its_first_step_leaves_no_watchdog_armed(
    tmp_path: Path,
) -> None:
    """Cancelled before it ever ran, a run's watchdog is disarmed and releases nothing."""
    clock = SystemClock()
    now = clock.monotonic()
    record = begin_record(
        (PriorityBucket(0, 1),),
        start_time=time.time(),
        start_monotonic=now,
        boot_id="b",
        mode="delete",
    )
    release = Releases()
    run, _ = build_run(
        tmp_path,
        record,
        Deadlines(start=now, phase_ends=(now + 0.05,)),
        state=NodeStateDouble(None),
        kube=HangingKube(),
        release=release,
        clock=clock,
    )
    task = run.start()
    run.halt("cancelled")
    task.cancel()
    assert run.watchdog is not None
    assert run.watchdog.join(5)  # its thread is over: it can release nothing any more
    assert release.threads == []
    await asyncio.gather(task, return_exceptions=True)
