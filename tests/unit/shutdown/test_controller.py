"""The shutdown controller's own decisions, driven through its event queue without a bus.

The bus address points at nothing, so the real logind session only ever reports BusLost;
events are put on the session's queue the way the session would. Node-only mode (no
cluster) unless a test hands the controller doubles for the cluster side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import structlog
from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config import AgentConfig, parse_document
from agent.kube.events import ObjectRef
from agent.logind.session import PrepareForShutdown
from agent.node.paths import HostPaths
from agent.shutdown.controller import ShutdownController
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.run import ClusterAccess
from agent.shutdown.store import RecordStore
from agent.telemetry.health import Health
from tests.harness.waiting import wait_until

BOOT_ID = "5b1f3c9e-0000-4000-8000-00000000abcd"


def build_controller(tmp_path: Path, budget: int = 2, mode: str = "delete") -> ShutdownController:
    random = tmp_path / "proc" / "sys" / "kernel" / "random"
    random.mkdir(parents=True)
    (random / "boot_id").write_text(BOOT_ID + "\n")
    config = parse_document(
        AgentConfig,
        f"nodeName: node-1\nstateDir: {tmp_path / 'state'}\n"
        f"shutdownGracePeriodByPodPriority:\n"
        f"  - {{priority: 0, shutdownGracePeriodSeconds: {budget}}}\n"
        f"shutdown:\n  mode: {mode}\n  dbusCallTimeout: 0.2s\n"
        f"  logindDropInPath: {tmp_path / 'x.conf'}\n",
        "test config",
    )
    return ShutdownController(
        config=config,
        node_name="node-1",
        paths=HostPaths(proc=tmp_path / "proc"),
        metrics=ShutdownMetrics(CollectorRegistry()),
        health=Health(),
        clock=SystemClock(),
        cluster=None,
    )


@pytest.fixture
def no_bus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus-here'}")


@pytest.fixture
async def running(
    tmp_path: Path, no_bus: None
) -> AsyncIterator[Callable[[ShutdownController], asyncio.Task[None]]]:
    tasks: list[asyncio.Task[None]] = []

    def start(controller: ShutdownController) -> asyncio.Task[None]:
        task = asyncio.create_task(controller.run())
        tasks.append(task)
        return task

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` (a hang guard)."""
    await wait_until(condition, "condition", timeout, interval=0.005)


async def logged(logs: list[dict[str, Any]], event: str) -> None:
    """Wait (bounded) until ``event`` was logged."""
    await until(lambda: any(e["event"] == event for e in logs))


def prepare(active: bool, ago: float = 0.0) -> PrepareForShutdown:
    return PrepareForShutdown(active, monotonic=time.monotonic() - ago, wall=time.time() - ago)


async def test_deadlines_count_from_the_signal_not_from_its_handling(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """A PrepareForShutdown handled late keeps the start time the signal was received at."""
    controller = build_controller(tmp_path)
    event = prepare(True, ago=1.5)
    controller.logind.session.events.put_nowait(event)
    with structlog.testing.capture_logs() as logs:
        running(controller)
        await logged(logs, "graceful shutdown finished")
    record = controller.record
    assert record is not None
    assert record.start_time == event.wall
    assert record.start_monotonic == event.monotonic


class HungStore(RecordStore):
    """A state file whose writes never finish (a hung fsync)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.attempts = 0

    async def _write_latest(self) -> bool:
        self.attempts += 1
        await asyncio.Event().wait()
        return True  # pragma: no cover - never reached


async def test_hung_state_file_write_holds_up_neither_the_phases_nor_the_release(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """With the first state-file write hung, the run still starts and releases the lock."""
    controller = build_controller(tmp_path)
    store = HungStore(controller.store.path)
    controller.store = store
    controller.logind.session.events.put_nowait(prepare(True))
    with structlog.testing.capture_logs() as logs:
        running(controller)
        await logged(logs, "graceful shutdown finished")
    assert store.attempts >= 1  # the record was handed to the (hung) store all the same
    assert [e["released_by"] for e in logs if e["event"] == "graceful shutdown finished"] == [
        "phases-done"
    ]


class Recorder:
    """Stands in for the taint keeper and the event recorder: records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def want(self, present: bool, *, deadline: float | None = None) -> None:
        self.calls.append(("taint", present, deadline))

    async def emit(self, ref: ObjectRef, kind: str, reason: str, message: str) -> None:
        self.calls.append(("event", ref.name, kind, reason, message))

    def close(self) -> None:
        pass


async def test_cancellation_without_a_shutdown_of_ours_changes_nothing(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """PrepareForShutdown(false) with no shutdown on record posts no Event, touches no taint."""
    controller = build_controller(tmp_path)
    recorder = Recorder()
    controller.cluster = ClusterAccess(
        node_state=None,  # type: ignore[arg-type]  # never read without a shutdown
        kube=None,  # type: ignore[arg-type]
        taint=recorder,  # type: ignore[arg-type]
        events=recorder,  # type: ignore[arg-type]
        node_ref=ObjectRef.node("node-1"),
    )
    controller.logind.session.events.put_nowait(prepare(False))
    controller.logind.session.events.put_nowait(prepare(False))
    with structlog.testing.capture_logs() as logs:
        running(controller)
        # Both handled, and every task their handling spawned (an Event, a record write)
        # has ended: spawning is synchronous with the handling, so none can come later.
        await until(
            lambda: (
                sum("PrepareForShutdown(false)" in e["event"] for e in logs) >= 2
                and not controller._tasks
            )
        )
    assert recorder.calls == []
    assert controller.record is None


async def test_controller_fails_when_its_logind_session_dies(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """If the logind session task ends, the controller fails so the supervisor restarts it."""
    controller = build_controller(tmp_path)

    async def broken_session() -> None:
        raise RuntimeError("the session broke")

    controller.logind.session.run = broken_session  # type: ignore[method-assign]
    task = running(controller)
    done, _ = await asyncio.wait({task}, timeout=5)
    assert task in done, "the controller kept going without its logind session"
    with pytest.raises(RuntimeError, match="logind session"):
        task.result()


def live_session_tasks() -> list[asyncio.Task[Any]]:
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done() and "LogindSession.run" in repr(task.get_coro())
    ]


async def test_stop_ends_the_logind_session_for_good(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """After stop() no session task is left, and no event starts a shutdown any more."""
    controller = build_controller(tmp_path)
    with structlog.testing.capture_logs() as logs:
        running(controller)
        await logged(logs, "logind unavailable; the lock cannot be checked")
    assert live_session_tasks()
    await controller.stop()
    assert live_session_tasks() == []
    controller.logind.session.events.put_nowait(prepare(True))
    for _ in range(20):
        await asyncio.sleep(0)
    assert controller.record is None


class HangingKube:
    """Pod deletes and status patches that never answer: the phase runs to its end."""

    async def delete(self, *args: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        await asyncio.Event().wait()
        return {}  # pragma: no cover - never reached

    patch = delete


class OnePodState:
    """A synced NodeState holding one ordinary pod that never leaves."""

    synced = pods_synced = pods_live = True
    version = 0
    pods: ClassVar[dict[str, Any]] = {
        "default/web": {
            "metadata": {"name": "web", "namespace": "default", "uid": "web-uid"},
            "spec": {"priority": 0, "terminationGracePeriodSeconds": 30},
            "status": {"phase": "Running"},
        }
    }

    def pod_list(self) -> list[dict[str, Any]]:
        return list(self.pods.values())

    async def wait_changed(self, version: int, timeout: float) -> None:  # noqa: ARG002 - NodeState's signature
        await asyncio.sleep(timeout)


async def test_cancellation_mid_phase_records_the_phase_as_cancelled_with_its_end(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """A phase interrupted by PrepareForShutdown(false) is recorded cancelled, with an end time."""
    controller = build_controller(tmp_path, budget=30)
    recorder = Recorder()
    controller.cluster = ClusterAccess(
        node_state=OnePodState(),  # type: ignore[arg-type]
        kube=HangingKube(),
        taint=recorder,  # type: ignore[arg-type]
        events=recorder,  # type: ignore[arg-type]
        node_ref=ObjectRef.node("node-1"),
    )
    controller.logind.session.events.put_nowait(prepare(True))
    with structlog.testing.capture_logs() as logs:
        running(controller)
        await logged(logs, "shutdown phase started")
        controller.logind.session.events.put_nowait(prepare(False))
        await until(lambda: controller.record is not None and not controller.record.open)
    assert controller.record is not None
    assert controller.record.status.value == "cancelled"
    (phase,) = controller.record.phases
    assert phase.status.value == "cancelled"
    assert phase.end_time is not None
    assert ("taint", False, None) in recorder.calls


class CancellableKube:
    """Evictions and deletes that never answer, noting each delete that was cancelled."""

    def __init__(self) -> None:
        self.cancelled_deletes: list[str] = []

    async def evict(self, name: str, namespace: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        await asyncio.Event().wait()
        return {}  # pragma: no cover - never reached

    async def patch(self, resource: Any, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        await asyncio.Event().wait()
        return {}  # pragma: no cover - never reached

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled_deletes.append(name)
            raise
        return {}  # pragma: no cover - never reached


async def test_a_called_off_shutdown_stops_its_late_deletes(
    tmp_path: Path, running: Callable[[ShutdownController], asyncio.Task[None]]
) -> None:
    """PrepareForShutdown(false) stops the late deletes still retrying: the node stays up."""
    controller = build_controller(tmp_path, budget=1, mode="evict")
    recorder, kube = Recorder(), CancellableKube()
    controller.cluster = ClusterAccess(
        node_state=OnePodState(),  # type: ignore[arg-type]
        kube=kube,  # type: ignore[arg-type]
        taint=recorder,  # type: ignore[arg-type]
        events=recorder,  # type: ignore[arg-type]
        node_ref=ObjectRef.node("node-1"),
    )
    controller.logind.session.events.put_nowait(prepare(True))
    with structlog.testing.capture_logs() as logs:
        running(controller)
        # The eviction never answers: at the deadline the pod gets a late delete, which hangs.
        await logged(
            logs, "no eviction or delete of the pod went through by the deadline; deleting it now"
        )
        controller.logind.session.events.put_nowait(prepare(False))
        await until(lambda: kube.cancelled_deletes == ["web"])
        await logged(logs, "late pod deletes of the called-off shutdown stopped")
