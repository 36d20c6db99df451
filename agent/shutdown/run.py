"""One graceful shutdown, from PrepareForShutdown(true) to the release of the lock.

The order of work is chosen for the two things that matter most: the first pod deletion
goes out within milliseconds of the signal, and the lock is released by the budget's end
whatever the API server does.

- The record is persisted first (so a restarted agent can resume), but a write that hangs
  (a stuck disk) holds the phases for ``FIRST_SAVE_SECONDS`` at most. The Node Event goes
  out in the background.
- The taint comes before the first pod request: a scheduler that has not seen it yet may
  bind a pod to the node, which the shutdown would kill moments after it started. The
  controller starts the (guarded) patch when the signal arrives; the run waits for the API
  server to have stored it before it touches a pod, but only until
  ``Deadlines.taint_wait_end`` (a short while, a small share of the next phase). An API
  server too slow for that, or refusing the patch, does not hold the phases up: they start,
  the taint is retried in the background until the budget's end, and the run says so (a
  warning, ``kubelet_companion_shutdown_started_untainted_total``). A resumed run waits the
  same way, so a Node that lost the taint while the agent was away gets it back first.
- Phases run from low priority to high. Each one is planned when it starts, from NodeState,
  so pods that arrived meanwhile are not missed. All pods of a phase are terminated
  concurrently; the phase ends when they are gone from NodeState or at its absolute
  deadline.
- A pod that arrives on the node during the shutdown (not in NodeState when the run
  started: bound before the scheduler saw the taint, or tolerating it) is stopped in the
  phase of its own bucket, or in the running one when its own has passed; a running phase
  takes such pods in on every change NodeState shows while its pod watch is open. Its
  result is counted under its own bucket's priority, never the phase's, and each one is
  logged ("late pod") and counted as a late arrival.
- A phase ends early only on a view of the node we trust: the pod watch is open, or, when
  it is not (the API server was unreachable, the watch was cut and has not resumed), a list
  of the node's pods straight from the API server. Otherwise a pod created while the watch
  was down would be missing from the cache, its phase would look done, and the next phase
  would start with it still running (or it would never be terminated at all). Before it
  ends, a phase is planned again: pods of it, or of an earlier phase, that no phase has
  targeted yet (they reached the cache late) join it and are waited for too.
- The whole run sits inside ``asyncio.timeout`` at the budget's end, and a watchdog thread
  releases the lock at the same moment in case the loop itself is stuck. ``start`` arms
  the watchdog before anything else, synchronously: nothing that happens on the loop
  afterwards (a hung state-file write, a slow event) can keep it from firing.
- A phase whose deadline passed before it could start (a 0 s bucket after a phase that ran
  to its deadline, a late resume) still has its pods told to stop, as kubelet does; it is
  just not waited for. Likewise a pod still here at its phase deadline with no accepted
  delete or eviction (a PDB held it, a request was refused or never answered) is deleted
  then, even when that deadline is the budget's end. Such late requests run as
  ``detach``ed tasks (the controller's): the lock waits for them to be accepted only until
  the budget's end, and they may complete after the release.

The taint and the Node Event are the controller's: they outlive the run (a cancellation
undoes the taint). Cancellation (PrepareForShutdown(false)) cancels the run's task; the run
cleans up its own tasks and its watchdog, sends no late requests, and ``call_off_late``
stops those still retrying: the node stays up, so its pods must too (a late delete going
on for its 5 s could otherwise land in the middle of the next shutdown's first phase).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Literal

import structlog

from agent.clock import Clock, SystemClock, sleep_or_done
from agent.kube.backoff import Backoff, retry_async
from agent.kube.errors import KubeError
from agent.kube.events import EventRecorder, ObjectRef
from agent.kube.nodestate import NodeState
from agent.shutdown.deadlines import Deadlines
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.phase_pods import PhasePods, PodResult
from agent.shutdown.phases import PodTarget, plan_phases
from agent.shutdown.record import (
    OPEN_PHASES,
    PhaseStatus,
    ShutdownRecord,
    ShutdownStatus,
)
from agent.shutdown.store import RecordStore
from agent.shutdown.taint import TaintKeeper
from agent.shutdown.terminate import PodApi, delete_late
from agent.shutdown.watchdog import BudgetWatchdog

_log = structlog.get_logger(subsystem="shutdown.run")
LATE_LOOP_SECONDS = 0.25
FIRST_SAVE_SECONDS = 0.5
"""How long the first pod deletion may wait for the record to reach the disk."""
RELIST_TIMEOUT_SECONDS = 2.0
"""One request of the list that stands in for a broken pod watch."""
RELIST_RETRY = Backoff(initial=0.2, factor=2.0, cap=1.0)
Halt = Literal["cancelled", "stopped"]
"""Why the controller cancels a run: logind called the shutdown off, or the agent stops."""


@dataclass(frozen=True)
class ClusterAccess:
    """What a run needs from the cluster; ``None`` in node-only mode."""

    node_state: NodeState
    kube: PodApi
    taint: TaintKeeper
    events: EventRecorder
    node_ref: ObjectRef


def _stored(tainting: asyncio.Task[bool]) -> bool:
    """The taint write finished and the API server has the taint."""
    if not tainting.done() or tainting.cancelled() or tainting.exception() is not None:
        return False
    return tainting.result()


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
        detach: Callable[[Coroutine[object, object, object]], asyncio.Task[object]],
        resumed: bool = False,
        on_change: Callable[[ShutdownRecord], None] = lambda _record: None,
        tainting: asyncio.Task[bool] | None = None,
    ) -> None:
        self.tainting = tainting
        """The controller's write of the shutting-down taint (True once stored), which the
        first pod request waits for a bounded time; ``None`` without a cluster."""
        self.on_change = on_change
        """Told about every phase change (the controller publishes it to the status board)."""
        self.record = record
        self.deadlines = deadlines
        self.cluster = cluster
        self.store = store
        self.metrics = metrics
        self.release = release
        self.clock = clock
        self.include_daemon_set_pods = include_daemon_set_pods
        self.detach = detach
        """Runs a coroutine that may outlive the run (late terminations)."""
        self._late: set[asyncio.Task[object]] = set()
        self.resumed = resumed
        self.buckets = record.buckets
        self.watchdog: BudgetWatchdog | None = None
        self._background: set[asyncio.Task[object]] = set()
        self._results: dict[str, int] = {}
        self._targeted: set[tuple[str, str]] = set()
        """(key, uid) of every pod a phase of this run has told to stop."""
        self._there_at_start: frozenset[tuple[str, str]] | None = None
        """(key, uid) of the node's pods when the run started (NodeState's first synced
        view); any other pod a phase stops arrived during the shutdown."""
        self.halted: Halt | Literal[""] = ""
        """Why the controller is about to cancel this run (logind's cancellation, or the
        agent stopping), so the interrupted phase is recorded for what it is."""

    # -- the whole run ------------------------------------------------------------------

    def start(self) -> asyncio.Task[ShutdownRecord]:
        """Arm the watchdog now, note the node's pods, then run the phases in a task of
        their own."""
        self._arm()
        self._note_pods_at_start()
        return asyncio.get_running_loop().create_task(self.execute(), name="shutdown-run")

    def _arm(self) -> BudgetWatchdog:
        if self.watchdog is None:
            # The deadlines are on the controller's clock, so the watchdog reads the same
            # one (a Clock's monotonic must be safe to call from any thread).
            self.watchdog = BudgetWatchdog(
                self.deadlines.budget_end,
                self.release,
                monotonic=self.clock.monotonic,
                now=self.clock.now,
            ).arm()
        return self.watchdog

    def halt(self, why: Halt) -> None:
        """The controller is about to cancel this run: record why, and disarm the watchdog
        now (the task may be cancelled before it ever ran, and then no ``finally`` would)."""
        self.halted = why
        if self.watchdog is not None:
            self.watchdog.disarm()

    def call_off_late(self) -> int:
        """The shutdown was called off: stop the late deletes still retrying (a request
        already on the wire may still land); returns how many were stopped."""
        pending = [task for task in self._late if not task.done()]
        for task in pending:
            task.cancel()
        return len(pending)

    async def execute(self) -> ShutdownRecord:
        watchdog = self._arm()
        try:
            why = "phases-done"
            try:
                async with asyncio.timeout(self.deadlines.remaining(self.clock.monotonic())):
                    if not self.resumed:  # a resumed run's record is on disk already
                        await self._persist_first()
                    await self._wait_for_taint()
                    await self._run_phases()
            except TimeoutError:
                why = "budget"
                # The budget's end is every phase's deadline: phases it came before (0 s
                # buckets at the end) still have their pods told to stop.
                for index, phase in enumerate(self.record.phases):
                    if phase.status in OPEN_PHASES:
                        self._run_late_phase(index)
            await asyncio.sleep(0)  # let late requests reach the client's threads first
            released = self.release()
            late = self.clock.monotonic() - self.deadlines.budget_end
            if watchdog.fired and late > LATE_LOOP_SECONDS:
                why = "watchdog"  # the loop itself was stuck past the budget
                _log.warning("the event loop was late; the watchdog released the lock", late=late)
            return await self._finish(why, released=released, ended=watchdog.fired_at)
        finally:
            watchdog.disarm()
            for task in self._background:
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

    async def _persist_first(self) -> None:
        """Put the record on disk before any pod is touched, waiting a bounded time."""
        write = self.store.save_soon(self.record)
        # Watched, not under a timeout: the write must go on (see ``save_soon``), and the
        # race never cancels a task it was handed. Real time, as before.
        await sleep_or_done(SystemClock(), FIRST_SAVE_SECONDS, write)
        if not write.done():
            _log.warning(
                "the shutdown state file is slow to write; the phases start without it",
                waited_seconds=FIRST_SAVE_SECONDS,
            )

    async def _wait_for_taint(self) -> None:
        """Until the API server stored the taint, or ``Deadlines.taint_wait_end``."""
        tainting = self.tainting
        if tainting is None or not any(p.status in OPEN_PHASES for p in self.record.phases):
            return
        began = self.clock.monotonic()
        if not tainting.done():
            # Watched, never cancelled: asyncio.wait leaves the task running, so a taint
            # that misses this wait is still retried (until the budget's end). Real time.
            wait_end = self.deadlines.taint_wait_end(began)
            await asyncio.wait({tainting}, timeout=wait_end - began)
        waited = round(self.clock.monotonic() - began, 6)
        self.metrics.taint_wait.set(waited)
        if _stored(tainting):
            _log.info(
                "shutting-down taint stored; the phases start",
                waited_seconds=waited,
                **self._stamp(),
            )
            return
        self.metrics.untainted_starts.inc()
        _log.warning(
            "the shutting-down taint is not stored yet; the phases start without it and it "
            "is still retried",
            waited_seconds=waited,
            **self._stamp(),
        )
        tainting.add_done_callback(self._taint_stored_late)

    def _taint_stored_late(self, tainting: asyncio.Task[bool]) -> None:
        if _stored(tainting):
            _log.info("shutting-down taint stored after the first deletions", **self._stamp())

    def _stamp(self) -> dict[str, float]:
        """When, on both clocks, for log lines a run beside a real kubelet is measured by:
        ``monotonic`` (the clock of the deadlines; ``since_start_seconds`` counts from the
        signal), and ``wall`` (Unix seconds, to compare with other hosts' logs)."""
        monotonic = self.clock.monotonic()
        return {
            "monotonic": round(monotonic, 6),
            "wall": round(self.clock.now(), 6),
            "since_start_seconds": round(monotonic - self.deadlines.start, 6),
        }

    # -- phases -------------------------------------------------------------------------

    async def _run_phases(self) -> None:
        for index, phase in enumerate(self.record.phases):
            if phase.status not in OPEN_PHASES:
                continue  # done before an agent restart
            deadline = self.deadlines.phase_ends[index]
            if self.clock.monotonic() >= deadline:
                self._run_late_phase(index)
                continue
            await self._run_phase(index, deadline)
        if late := [task for task in self._late if not task.done()]:
            await asyncio.wait(late)  # accepted before the release, if the budget allows

    def _run_late_phase(self, index: int) -> None:
        """A phase already past its deadline: tell its pods to stop, do not wait for them."""
        priority = self.record.phases[index].priority
        targets = self._plan(index)
        now = self.clock.now()
        if targets is None:  # NodeState never synced: nothing known to terminate
            self._update_phase(index, status=PhaseStatus.TIMED_OUT, start_time=now, end_time=now)
            return
        if not targets:
            self._update_phase(index, status=PhaseStatus.EMPTY, start_time=now, end_time=now)
            return
        self._take(index, targets)
        for target in targets:
            self._send_late(target)
            self._count(target, PodResult.TIMED_OUT)
        self._update_phase(
            index, status=PhaseStatus.TIMED_OUT, start_time=now, end_time=now, pods=len(targets)
        )
        _log.info(
            "shutdown phase past its deadline: pods told to stop, not waited for",
            priority=priority,
            pods=len(targets),
            **self._stamp(),
        )

    async def _run_phase(self, index: int, deadline: float) -> None:
        priority = self.record.phases[index].priority
        targets = await self._targets(index, deadline)
        now = self.clock.now()
        if targets == () and self.cluster is not None:
            # Empty by the cache: make sure the cache is not just missing them.
            targets = self._plan(index) if await self._trusted_view(deadline) else None
        if targets is None:  # no pods known before the deadline (no watch, no list)
            self._update_phase(index, status=PhaseStatus.TIMED_OUT, start_time=now, end_time=now)
            return
        if not targets:
            self._update_phase(index, status=PhaseStatus.EMPTY, start_time=now, end_time=now)
            return
        assert self.cluster is not None  # noqa: S101 - targets come from the cluster
        self._take(index, targets)
        pods = PhasePods(
            targets,
            node_state=self.cluster.node_state,
            kube=self.cluster.kube,
            evict=self.record.mode == "evict",
            monotonic=self.clock.monotonic,
            now=self.clock.now,
        )
        pods.start(deadline, self._spawn)
        started = self.record.phases[index].start_time or now
        self._update_phase(index, status=PhaseStatus.RUNNING, start_time=started, pods=len(targets))
        _log.info("shutdown phase started", priority=priority, pods=len(targets), **self._stamp())
        all_gone = False
        try:
            all_gone = await self._wait_phase(index, pods, deadline)
        finally:  # also when the budget's end or a cancellation interrupts the phase
            self._end_phase(index, pods, all_gone=all_gone)

    async def _wait_phase(self, index: int, pods: PhasePods, deadline: float) -> bool:
        """Until the phase's pods are gone (True) or its deadline (False). Pods of it (or of
        a phase before it) that arrive meanwhile join it: at every change NodeState shows
        while its pod watch is open, and, before the phase ends early, once the view is
        trusted (a list of the node's pods when the watch is down)."""
        assert self.cluster is not None  # noqa: S101 - a running phase has a cluster
        state = self.cluster.node_state

        def join_arrivals() -> None:
            if state.pods_live:  # a cache that may miss pods is checked at the end instead
                self._join(index, pods, deadline)

        while await pods.wait_gone(deadline, on_wake=join_arrivals):
            if not await self._trusted_view(deadline):
                return False
            if not self._join(index, pods, deadline):
                return True
        return False

    def _join(self, index: int, pods: PhasePods, deadline: float) -> bool:
        """Pods for phase ``index`` that no phase has told to stop yet join the running
        ``pods`` (told to stop at once); False when there are none."""
        late = self._plan(index)
        if not late:
            return False
        self._take(index, late)
        pods.add(late, deadline, self._spawn)
        self._update_phase(index, pods=len(pods.targets))
        return True

    def _end_phase(self, index: int, pods: PhasePods, *, all_gone: bool) -> None:
        priority = self.record.phases[index].priority
        results = pods.results()
        for target, result in results:
            self._count(target, result)
        gone = sum(1 for _, result in results if result is PodResult.GONE)
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
        if status is PhaseStatus.TIMED_OUT:  # the deadline came (or the budget's end)
            for target in pods.undeleted():
                _log.info(
                    "no eviction or delete of the pod went through by the deadline; "
                    "deleting it now",
                    pod=target.key,
                    outcome=str(pods.outcomes.get(target.key, "unanswered")),
                )
                self._send_late(target)
        _log.info(
            "shutdown phase ended",
            priority=priority,
            pods=len(pods.targets),
            gone=gone,
            status=status.value,
            **self._stamp(),
        )

    async def _targets(self, index: int, deadline: float) -> tuple[PodTarget, ...] | None:
        if self.cluster is None:
            return ()
        if not self.cluster.node_state.pods_synced and not await self._trusted_view(deadline):
            return None
        return self._plan(index)

    async def _trusted_view(self, deadline: float) -> bool:
        """Until NodeState can be trusted to hold every pod of the node: its pod watch is
        open, or a list of the node's pods from the API server replaced the cache (retried
        with backoff until the deadline). False when the deadline comes first."""
        assert self.cluster is not None  # noqa: S101 - only called with a cluster
        state, monotonic = self.cluster.node_state, self.clock.monotonic
        if state.pods_live:
            return True
        if deadline - monotonic() <= 0:
            return False

        async def relist() -> None:
            remaining = max(0.001, deadline - monotonic())
            await state.relist_pods(timeout=min(remaining, RELIST_TIMEOUT_SECONDS))

        try:
            await retry_async(
                relist,
                backoff=RELIST_RETRY,
                attempts=1_000_000,  # only the deadline ends the retries
                deadline=deadline,
                retry_on=(KubeError,),
                monotonic=monotonic,
            )
        except KubeError as error:
            _log.info(
                "the pod watch is down and the node's pods could not be listed",
                error=str(error),
                status=error.status,
            )
            return False
        _log.info("the pod watch is down: the node's pods were listed instead")
        return True

    def _note_pods_at_start(self) -> None:
        """Which pods were on the node when the shutdown started, if NodeState knows yet
        (else at the first plan): any other pod a phase stops is a late arrival."""
        if self._there_at_start is not None or self.cluster is None:
            return
        state = self.cluster.node_state
        if state.pods_synced:
            self._there_at_start = frozenset(
                (f"{meta.get('namespace')}/{meta.get('name')}", str(meta.get("uid") or ""))
                for meta in ((pod.get("metadata") or {}) for pod in state.pod_list())
            )

    def _take(self, index: int, targets: tuple[PodTarget, ...]) -> None:
        """``targets`` are told to stop in phase ``index`` now; log and count those that
        arrived on the node during the shutdown."""
        self._targeted.update((target.key, target.uid) for target in targets)
        there = self._there_at_start
        if there is None:
            return
        phase = self.record.phases[index]
        for target in targets:
            if (target.key, target.uid) in there:
                continue
            self.metrics.late_pod(target.bucket)
            _log.info(
                "late pod: it arrived on the node during the shutdown and joins a phase",
                pod=target.key,
                uid=target.uid,
                priority=target.priority,
                bucket=target.bucket,
                phase=phase.priority,
                own_phase=target.bucket == phase.priority,
                grace_seconds=target.grace_seconds,
                **self._stamp(),
            )

    def _plan(self, index: int) -> tuple[PodTarget, ...] | None:
        """The pods phase ``index`` must stop now, from NodeState (``None`` while it has not
        synced): its own, and any of an earlier phase that no phase has told to stop yet
        (they arrived late; their grace is capped by this phase's as well)."""
        if self.cluster is None:
            return ()
        state = self.cluster.node_state
        if not state.pods_synced:
            return None
        self._note_pods_at_start()
        plan = plan_phases(
            self.buckets, state.pod_list(), include_daemon_set_pods=self.include_daemon_set_pods
        )
        budget = self.record.phases[index].budget_seconds
        return tuple(
            target if phase.index == index else target.within(budget)
            for phase in plan.phases[: index + 1]
            for target in phase.pods
            if (target.key, target.uid) not in self._targeted
        )

    def _count(self, target: PodTarget, result: PodResult) -> None:
        """A pod's result, under its own bucket's priority whichever phase stopped it."""
        self._results[result.value] = self._results.get(result.value, 0) + 1
        self.metrics.pod_result(target.bucket, result.value)

    def _send_late(self, target: PodTarget) -> None:
        """A delete after the target's phase deadline: ours to wait for only within budget."""
        assert self.cluster is not None  # noqa: S101 - only called with targets, i.e. a cluster
        kube, clock = self.cluster.kube, self.clock
        late = delete_late(
            kube, target, monotonic=clock.monotonic, now=clock.now, spawn=self.detach
        )
        self._late.add(self.detach(late))

    # -- bookkeeping --------------------------------------------------------------------

    def _update_phase(self, index: int, **changes: object) -> None:
        self.record = self.record.with_phase(index, **changes)
        self.on_change(self.record)
        self.metrics.show_phase(self.record.phases[index])
        self.store.save_soon(self.record)

    def _spawn(self, coroutine: Coroutine[object, object, object]) -> asyncio.Task[object]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task
