"""One graceful shutdown, from PrepareForShutdown(true) to the release of the lock.

The order of work is chosen for the two things that matter most: the first pod deletion
goes out within milliseconds of the signal, and the lock is released by the budget's end
whatever the API server does.

- The record is persisted first (so a restarted agent can resume); the taint and the Node
  Event go out in the background: neither may hold up the phases.
- Phases run from low priority to high. Each one is planned when it starts, from NodeState
  (never a fresh list), so pods that arrived meanwhile are not missed. All pods of a phase
  are terminated concurrently; the phase ends when they are gone from NodeState or at its
  absolute deadline.
- The whole run sits inside ``asyncio.timeout`` at the budget's end, and a watchdog thread
  releases the lock at the same moment in case the loop itself is stuck.

The taint and the Node Event are the controller's: they outlive the run (a cancellation
undoes the taint). Cancellation (PrepareForShutdown(false)) cancels the run's task; the run
only cleans up its own tasks and its watchdog.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Literal

import structlog

from agent.config.shutdown import PriorityBucket
from agent.kube.events import EventRecorder, ObjectRef
from agent.kube.nodestate import NodeState
from agent.runtime.clock import Clock
from agent.shutdown.deadlines import Deadlines
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.phases import PodTarget, plan_phases
from agent.shutdown.record import (
    OPEN_PHASES,
    PhaseStatus,
    ShutdownRecord,
    ShutdownStatus,
)
from agent.shutdown.store import RecordStore
from agent.shutdown.taint import TaintKeeper
from agent.shutdown.terminate import Outcome, PodApi, delete_pod, evict_pod
from agent.shutdown.watchdog import BudgetWatchdog

_log = structlog.get_logger(subsystem="shutdown.run")
LATE_LOOP_SECONDS = 0.25


@dataclass(frozen=True)
class ClusterAccess:
    """What a run needs from the cluster; ``None`` in node-only mode."""

    node_state: NodeState
    kube: PodApi
    taint: TaintKeeper
    events: EventRecorder
    node_ref: ObjectRef


@dataclass
class _PhaseWork:
    targets: tuple[PodTarget, ...]
    outcomes: dict[str, Outcome] = dataclasses.field(default_factory=dict)
    confirmed_gone: set[str] = dataclasses.field(default_factory=set)


def record_buckets(record: ShutdownRecord) -> tuple[PriorityBucket, ...]:
    """The buckets a record was started with (a resumed run keeps them, not today's config)."""
    return tuple(
        PriorityBucket(priority=phase.priority, shutdown_grace_period_seconds=phase.budget_seconds)
        for phase in record.phases
    )


class ShutdownRun:
    def __init__(
        self,
        *,
        record: ShutdownRecord,
        deadlines: Deadlines,
        cluster: ClusterAccess | None,
        store: RecordStore,
        metrics: ShutdownMetrics,
        release: Callable[[], bool],
        clock: Clock,
        include_daemon_set_pods: bool,
        resumed: bool = False,
    ) -> None:
        self.record = record
        self.deadlines = deadlines
        self.cluster = cluster
        self.store = store
        self.metrics = metrics
        self.release = release
        self.clock = clock
        self.include_daemon_set_pods = include_daemon_set_pods
        self.resumed = resumed
        self.buckets = record_buckets(record)
        self._progress = asyncio.Event()
        self._background: set[asyncio.Task[object]] = set()
        self._fallbacks: set[asyncio.Task[None]] = set()
        """Deletes after a PDB held an eviction to its phase deadline: the lock waits for
        them to go out (bounded by the budget), or the pod would never be told to stop."""
        self._results: dict[str, int] = {}
        self.halted: Literal["", "cancelled", "stopped"] = ""
        """Why the controller is about to cancel this run (logind's cancellation, or the
        agent stopping), so the interrupted phase is recorded for what it is."""

    # -- the whole run ------------------------------------------------------------------

    async def execute(self) -> ShutdownRecord:
        watchdog = BudgetWatchdog(self.deadlines.budget_end, self.release, now=self.clock.now).arm()
        try:
            why = "phases-done"
            try:
                async with asyncio.timeout(self.deadlines.remaining(self.clock.monotonic())):
                    await self._run_phases()
            except TimeoutError:
                why = "budget"
            released = self.release()
            late = self.clock.monotonic() - self.deadlines.budget_end
            if watchdog.fired and late > LATE_LOOP_SECONDS:
                why = "watchdog"  # the loop itself was stuck past the budget
                _log.warning("the event loop was late; the watchdog released the lock", late=late)
            return await self._finish(why, released=released, ended=watchdog.fired_at)
        finally:
            watchdog.disarm()
            for task in [*self._background, *self._fallbacks]:
                task.cancel()

    async def _finish(self, why: str, *, released: bool, ended: float | None) -> ShutdownRecord:
        end = ended or self.clock.now()
        self.record = self.record.closed(ShutdownStatus.FINISHED, end_time=end, why=why)
        self.metrics.load(self.record)
        _log.info(
            "graceful shutdown finished",
            released_by=why,
            lock_released=released,
            resumed=self.resumed,
            seconds=round(end - self.record.start_time, 3),
            budget_seconds=self.record.budget_seconds,
            phases=[
                f"{p.priority}:{p.status.value}:{p.terminated}/{p.pods}" for p in self.record.phases
            ],
            pods=dict(sorted(self._results.items())),
        )
        try:
            async with asyncio.timeout(5.0):
                await self.store.save(self.record)
        except TimeoutError:
            _log.error("the final shutdown record was not written in time")
        return self.record

    # -- phases -------------------------------------------------------------------------

    async def _run_phases(self) -> None:
        for index, phase in enumerate(self.record.phases):
            if phase.status not in OPEN_PHASES:
                continue  # done before an agent restart
            deadline = self.deadlines.phase_ends[index]
            if self.clock.monotonic() >= deadline:
                self._update_phase(index, status=PhaseStatus.TIMED_OUT, end_time=self.clock.now())
                continue
            await self._run_phase(index, deadline)
        if self._fallbacks:
            await asyncio.wait(self._fallbacks)

    async def _run_phase(self, index: int, deadline: float) -> None:
        priority = self.record.phases[index].priority
        targets = await self._targets(index, deadline)
        now = self.clock.now()
        if targets is None:  # NodeState never synced before the deadline: nothing known
            self._update_phase(index, status=PhaseStatus.TIMED_OUT, start_time=now, end_time=now)
            return
        if not targets:
            self._update_phase(index, status=PhaseStatus.EMPTY, start_time=now, end_time=now)
            return
        work = _PhaseWork(targets)
        for target in targets:
            self._spawn(self._terminate(target, deadline, work))
        started = self.record.phases[index].start_time or now
        self._update_phase(index, status=PhaseStatus.RUNNING, start_time=started, pods=len(targets))
        _log.info("shutdown phase started", priority=priority, pods=len(targets))
        all_gone = False
        try:
            all_gone = await self._wait_gone(work, deadline)
        finally:  # also when the budget's end or a cancellation interrupts the phase
            gone = self._tally(priority, work)
            if all_gone:
                status = PhaseStatus.DONE
            elif self.halted == "stopped":  # the agent is going away: a restart resumes here
                status = PhaseStatus.RUNNING
            elif self.halted == "cancelled":
                status = PhaseStatus.CANCELLED
            else:
                status = PhaseStatus.TIMED_OUT
            ended = None if status is PhaseStatus.RUNNING else self.clock.now()
            self._update_phase(index, status=status, end_time=ended, terminated=gone)
            _log.info(
                "shutdown phase ended",
                priority=priority,
                pods=len(targets),
                gone=gone,
                status=status.value,
            )

    async def _targets(self, index: int, deadline: float) -> tuple[PodTarget, ...] | None:
        if self.cluster is None:
            return ()
        state = self.cluster.node_state
        if not state.synced:
            try:
                async with asyncio.timeout(max(0.0, deadline - self.clock.monotonic())):
                    await state.wait_synced()
            except TimeoutError:
                return None
        plan = plan_phases(
            self.buckets, state.pod_list(), include_daemon_set_pods=self.include_daemon_set_pods
        )
        return plan.phase_for(index).pods

    def _present(self, target: PodTarget, work: _PhaseWork | None = None) -> bool:
        if work is not None and target.key in work.confirmed_gone:
            return False
        assert self.cluster is not None  # noqa: S101 - only called with targets, i.e. a cluster
        pod = self.cluster.node_state.pods.get(target.key)
        return pod is not None and str((pod.get("metadata") or {}).get("uid") or "") == target.uid

    async def _wait_gone(self, work: _PhaseWork, deadline: float) -> bool:
        assert self.cluster is not None  # noqa: S101 - only called with targets, i.e. a cluster
        state = self.cluster.node_state
        while any(self._present(target, work) for target in work.targets):
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            self._progress.clear()
            changed = asyncio.ensure_future(state.wait_changed(state.version, timeout=remaining))
            progressed = asyncio.ensure_future(self._progress.wait())
            try:
                await asyncio.wait({changed, progressed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
                progressed.cancel()
        return True

    def _tally(self, priority: int, work: _PhaseWork) -> int:
        gone = 0
        for target in work.targets:
            outcome = work.outcomes.get(target.key)
            if not self._present(target, work):
                result = "gone"
                gone += 1
            elif outcome is Outcome.BLOCKED:
                result = "blocked"
            elif outcome is Outcome.REQUESTED:
                result = "timed-out"
            else:
                result = "failed"
            self._results[result] = self._results.get(result, 0) + 1
            self.metrics.pod_result(priority, result)
        return gone

    async def _terminate(self, target: PodTarget, deadline: float, work: _PhaseWork) -> None:
        assert self.cluster is not None  # noqa: S101 - only called with targets, i.e. a cluster
        kube = self.cluster.kube
        monotonic = self.clock.monotonic
        if self._mode == "evict":
            outcome = await evict_pod(
                kube,
                target,
                deadline=deadline,
                monotonic=monotonic,
                still_present=lambda: self._present(target, work),
            )
            if outcome is Outcome.FAILED:  # evictions refused outright: delete at once
                outcome = await delete_pod(kube, target, deadline=deadline, monotonic=monotonic)
            elif outcome is Outcome.BLOCKED:  # PDBs honoured until the deadline, then delete
                fallback = asyncio.get_running_loop().create_task(self._delete_at(target, deadline))
                self._fallbacks.add(fallback)
        else:
            outcome = await delete_pod(kube, target, deadline=deadline, monotonic=monotonic)
        work.outcomes[target.key] = outcome
        if outcome is Outcome.GONE:
            work.confirmed_gone.add(target.key)
        self._progress.set()

    async def _delete_at(self, target: PodTarget, when: float) -> None:
        assert self.cluster is not None  # noqa: S101 - only called with targets, i.e. a cluster
        await self.clock.sleep(when - self.clock.monotonic())
        if not self._present(target):
            return
        _log.info("PDB still blocks eviction at the phase deadline; deleting", pod=target.key)
        await delete_pod(
            self.cluster.kube,
            target,
            deadline=self.deadlines.budget_end,
            monotonic=self.clock.monotonic,
        )

    @property
    def _mode(self) -> str:
        return self.record.mode

    # -- bookkeeping --------------------------------------------------------------------

    def _update_phase(self, index: int, **changes: object) -> None:
        self.record = self.record.with_phase(index, **changes)
        phase = self.record.phases[index]
        if (duration := phase.duration) is not None:
            self.metrics.phase_duration.labels(priority=str(phase.priority)).set(duration)
        self.store.save_soon(self.record)

    def _spawn(self, coroutine: Coroutine[object, object, object]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
