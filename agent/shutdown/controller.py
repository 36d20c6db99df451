"""The shutdown controller: logind events in, runs of the phase plan and lock changes out.

One task owns all decisions, so no two of them race: it reads logind's events from the
session queue one at a time (through ``SessionListener``, which fails this task if the
session's own task ever ends). The shutdown itself runs in a task of its own
(``ShutdownRun``) so that a cancellation, a logind restart or a lost bus can still be
handled while the phases are under way. The lock and the delay are ``InhibitorGuard``'s
(never two locks), the taint ``TaintKeeper``'s (the newest wish wins), the record
``RecordStore``'s.

What happens when:
- start: load the state file (the metrics show the last shutdown), connect to the bus, and
  decide about what the file holds: resume an unfinished shutdown, clear one the node
  rebooted from or that was cancelled meanwhile, or start one logind is already preparing;
- bus connected, or logind (re)appeared on it: read ``PreparingForShutdown`` first (a
  signal sent while we could not hear it is acted on now), then
  ``InhibitorGuard.ensure_lock``;
- ``PrepareForShutdown(true)``: arm the watchdog and start the run, with deadlines counted
  from when the signal was *received* (events wait their turn in the queue); the taint
  patch goes out at once, the run persists the record (a bounded wait) and waits for the
  taint to be stored (a bounded wait, see ``ShutdownRun``) before the phases; the Node Event
  goes out in the background;
- ``PrepareForShutdown(false)``: stop any run, undo the taint, take a lock again; with no
  shutdown of ours under way there is nothing to undo, and no Event is posted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path

import structlog

from agent.clock import Clock
from agent.config import AgentConfig
from agent.config.shutdown import budget_seconds
from agent.kube.events import ObjectRef
from agent.logind.session import BusConnected, LogindEvent, LogindOwnerChanged, PrepareForShutdown
from agent.node.kernel import read_boot_id
from agent.node.paths import HostPaths
from agent.runtime.context import AgentContext, KubeContext
from agent.runtime.status import StatusBoard
from agent.runtime.supervisor import RootTask
from agent.shutdown.deadlines import Deadlines, deadlines_from
from agent.shutdown.inhibitor import InhibitorGuard
from agent.shutdown.listener import SessionListener
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.published import published
from agent.shutdown.record import ShutdownRecord, ShutdownStatus, begin_record
from agent.shutdown.run import ClusterAccess, Halt, ShutdownRun
from agent.shutdown.startup import StartupAction, decide_on_reconnect, decide_startup, is_current
from agent.shutdown.store import RecordStore
from agent.shutdown.taint import TaintKeeper
from agent.telemetry.health import Health

EVENT_REASON = "Shutdown"
DEGRADED_TAINT = "shutdown-taint"
RECHECK_SECONDS = 60.0
"""How often a held lock is checked against ListInhibitors without any event."""
RETRY_SECONDS = 2.0
"""How soon a wanted lock that could not be taken is tried again."""

_log = structlog.get_logger(subsystem="shutdown")


class ShutdownController:
    def __init__(
        self,
        *,
        config: AgentConfig,
        node_name: str,
        paths: HostPaths,
        metrics: ShutdownMetrics,
        health: Health,
        clock: Clock,
        cluster: KubeContext | None,
        status: StatusBoard | None = None,
    ) -> None:
        self.status = status
        self.options = config.shutdown
        self.buckets = config.shutdown_buckets
        self.budget = budget_seconds(self.buckets)
        self.paths = paths
        self.metrics = metrics
        metrics.budget.set(self.budget)
        self.health = health
        self.clock = clock
        self.store = RecordStore(Path(config.shutdown_state_file))
        self.logind = InhibitorGuard(
            options=self.options,
            budget=self.budget,
            metrics=metrics,
            health=health,
            clock=clock,
            paths=paths,
        )
        self.listener = SessionListener(self.logind.session)
        self.cluster = self._cluster_access(cluster, node_name)
        self._record: ShutdownRecord | None = None
        self.boot_id: str | None = None
        self._run: ShutdownRun | None = None
        self._run_task: asyncio.Task[ShutdownRecord] | None = None
        self._tasks: set[asyncio.Task[object]] = set()

    @property
    def record(self) -> ShutdownRecord | None:
        return self._record

    @record.setter
    def record(self, record: ShutdownRecord | None) -> None:
        # Every change of the record reaches the NodeReport through the status board.
        self._record = record
        self._publish(record)

    def _publish(self, record: ShutdownRecord | None) -> None:
        if self.status is not None:
            self.status.publish_shutdown(published(record))

    @property
    def enabled(self) -> bool:
        """Graceful shutdown is on: the guard's rule, from the budget."""
        return self.logind.enabled

    def _cluster_access(self, cluster: KubeContext | None, node: str) -> ClusterAccess | None:
        if cluster is None:
            return None
        return ClusterAccess(
            node_state=cluster.node_state,
            kube=cluster.kube,
            taint=TaintKeeper(
                cluster.patcher,
                cluster.node_state.node_object,
                monotonic=self.clock.monotonic,
                on_trouble=lambda problem: self.health.set_degraded(DEGRADED_TAINT, problem),
            ),
            events=cluster.events,
            node_ref=ObjectRef.node(node),
        )

    # -- the root task ------------------------------------------------------------------

    async def run(self) -> None:
        self.logind.prepare()
        self.record = await asyncio.to_thread(self.store.load)
        self.metrics.load(self.record)
        self.boot_id = await asyncio.to_thread(read_boot_id, self.paths)
        if not self.boot_id:
            _log.warning(
                "cannot read the boot ID; a shutdown on record is judged by its age and logind"
            )
        try:
            if not self.enabled:
                _log.info("graceful node shutdown is off (no shutdown grace period configured)")
                await self._apply_startup(self._decide_startup(None))
                await asyncio.Event().wait()  # idle: a root task must not return
            self.listener.start()
            pending = await self.logind.first_contact()
            preparing = await self.logind.preparing_for_shutdown()
            await self._apply_startup(self._decide_startup(preparing))
            for event in pending:  # PreparingForShutdown was just read: no reconciling
                await self._handle(event, reconcile=False)
            await self._event_loop()
        finally:
            self.listener.cancel()  # not awaited: this task may be being cancelled itself
            await self._stop_run()
            self.logind.close()
            for task in list(self._tasks):
                task.cancel()
            if self.cluster is not None:
                self.cluster.taint.close()

    async def stop(self) -> None:
        """Graceful stop: end any run (its record stays ``running`` so a restart resumes).

        The session task goes first and for good: closing its bus alone would only make it
        reconnect and hand this controller events after the stop.
        """
        await self.listener.stop()
        await self._stop_run()
        self.logind.close()

    async def _event_loop(self) -> None:
        while True:
            timeout = RECHECK_SECONDS if self.logind.lock_is_fine else RETRY_SECONDS
            event = await self.listener.next_event(timeout)
            if event is None:
                await self.logind.ensure_lock(reason="periodic check")
                continue
            await self._handle(event)

    async def _handle(self, event: LogindEvent, *, reconcile: bool = True) -> None:
        if isinstance(event, PrepareForShutdown):
            if event.active:
                self._begin_shutdown(event)
            else:
                await self._cancel_shutdown()
            return
        if reconcile and _logind_back(event):
            await self._reconcile_with_logind()
        await self.logind.on_bus_event(event)

    async def _reconcile_with_logind(self) -> None:
        """logind can hear us again: act on a PrepareForShutdown sent while it could not."""
        preparing = await self.logind.preparing_for_shutdown()
        action = decide_on_reconnect(
            self.record, self.boot_id, preparing, running=self._running, now=self.clock.now()
        )
        if action is StartupAction.BEGIN:
            _log.warning("logind prepares for shutdown and its signal was missed; starting now")
            self._begin_shutdown(None)
        elif action is StartupAction.CLEAR_CANCELLED:
            _log.warning("logind no longer prepares for shutdown; its cancellation was missed")
            await self._cancel_shutdown()

    # -- start-up -----------------------------------------------------------------------

    def _decide_startup(self, preparing: bool | None) -> StartupAction:
        return decide_startup(self.record, self.boot_id, preparing, now=self.clock.now())

    async def _apply_startup(self, action: StartupAction) -> None:
        record = self.record
        if action is StartupAction.BEGIN:
            if self.enabled:
                _log.warning("logind is already preparing for shutdown; starting the shutdown")
                self._begin_shutdown(None)
            return
        if record is None or action is StartupAction.NOTHING:
            return
        _log.info(
            "found an unfinished shutdown in the state file",
            action=action.value,
            status=record.status.value,
            same_boot=record.boot_id == self.boot_id if self.boot_id else "unknown",
        )
        if action is StartupAction.RESUME and self.enabled:
            self._start_run(record, resumed=True)
        elif action is StartupAction.CLEAR_AFTER_REBOOT:
            self._spawn(self._clear(record, ShutdownStatus.COMPLETE, why="rebooted"))
        else:  # cancelled while we were away, or resumed with shutdown handling now off
            self._spawn(self._clear(record, ShutdownStatus.CANCELLED, why="cancelled"))

    async def _clear(self, record: ShutdownRecord, status: ShutdownStatus, *, why: str) -> None:
        """Remove the taint (retrying until it is gone), then close the record."""
        if self.cluster is not None and not await self.cluster.taint.want(False):
            return
        if self.record is not record:
            return  # a newer shutdown began meanwhile; its record is the one that counts
        self.record = record.closed(status, end_time=None, why=why)
        self.metrics.load(self.record)
        await self.store.save(self.record)
        _log.info("earlier shutdown closed", status=status.value)

    # -- shutdown and cancellation ------------------------------------------------------

    @property
    def _running(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    def _begin_shutdown(self, signal: PrepareForShutdown | None) -> None:
        """Start a shutdown; ``signal`` says when logind's signal came (``None``: now)."""
        if self._running:
            _log.info("PrepareForShutdown(true) while a shutdown runs; ignored")
            return
        now, monotonic = self.clock.now(), self.clock.monotonic()
        record = begin_record(
            self.buckets,
            start_time=now if signal is None else signal.wall,
            start_monotonic=monotonic if signal is None else signal.monotonic,
            boot_id=self.boot_id or "",
            mode=self.options.mode,
        )
        self.record = record
        self.metrics.load(record)
        _log.info(
            "node shutdown detected",
            budget_seconds=record.budget_seconds,
            phases=len(record.phases),
            mode=record.mode,
            signal_age_seconds=round(monotonic - (record.start_monotonic or monotonic), 3),
        )
        # The watchdog is armed before anything else, here and synchronously; the run then
        # writes the record (waiting a bounded time for it) before it touches a pod. A state
        # file write that hangs can neither stop the phases nor keep the lock past the budget.
        self._start_run(record, resumed=False)
        self._emit_event("Shutdown manager detected shutdown event")

    def _start_run(self, record: ShutdownRecord, *, resumed: bool) -> None:
        deadlines = self._deadlines(record)
        tainting = None
        if self.cluster is not None:
            # Sent now, before the run's task first runs; the run's first pod request waits
            # for it (briefly), and it is retried until the budget's end whatever happens.
            tainting = self.cluster.taint.want(True, deadline=deadlines.budget_end)
        if resumed:
            _log.info(
                "resuming the shutdown inside its original deadlines",
                remaining_seconds=round(deadlines.remaining(self.clock.monotonic()), 3),
            )
        run = ShutdownRun(
            record=record,
            deadlines=deadlines,
            cluster=self.cluster,
            store=self.store,
            metrics=self.metrics,
            release=self.logind.keeper.release,
            clock=self.clock,
            include_daemon_set_pods=self.options.include_daemon_set_pods,
            detach=self._spawn,
            resumed=resumed,
            on_change=self._publish,
            tainting=tainting,
        )
        self._run = run
        self._run_task = run.start()  # arms the watchdog before it returns
        self._run_task.add_done_callback(self._run_ended)

    def _deadlines(self, record: ShutdownRecord) -> Deadlines:
        """The record's deadlines on our monotonic clock (the wall clock across boots)."""
        start = record.start_monotonic
        if start is None or record.boot_id != self.boot_id:
            start = self.clock.monotonic() - (self.clock.now() - record.start_time)
        return deadlines_from(start, record.phases)

    def _run_ended(self, task: asyncio.Task[ShutdownRecord]) -> None:
        if task.cancelled():
            return
        if (error := task.exception()) is not None:
            # A bug, not an API failure (those are handled inside). Do not hold the node.
            _log.error("the shutdown run failed; releasing the lock", error=repr(error))
            self.logind.keeper.release()
            return
        self.record = task.result()

    async def _stop_run(self, why: Halt = "stopped") -> None:
        task, run = self._run_task, self._run
        self._run_task = None
        if task is None or run is None:
            return
        if not task.done():
            run.halt(why)
            task.cancel()
            await asyncio.wait({task})  # unlike ``await task``, never mistakes its end for ours
        if why == "cancelled" and (stopped := run.call_off_late()):
            _log.info("late pod deletes of the called-off shutdown stopped", pods=stopped)
        self.record = run.record

    async def _cancel_shutdown(self) -> None:
        ours = self._running or is_current(self.record, self.boot_id, now=self.clock.now())
        await self._stop_run("cancelled")
        record = self.record
        if not ours or record is None:
            _log.info(
                "PrepareForShutdown(false) with no shutdown of ours under way; nothing to undo"
            )
        else:
            _log.info("shutdown cancelled by logind (PrepareForShutdown(false))")
            self.record = record.closed(
                ShutdownStatus.CANCELLED,
                end_time=record.end_time or self.clock.now(),
                why="cancelled",
            )
            self.metrics.load(self.record)
            self._spawn(self.store.save(self.record))
            if self.cluster is not None:
                self.cluster.taint.want(False)
            self._emit_event("Shutdown manager detected shutdown cancellation")
        await self.logind.retake_after_cancel()

    def _emit_event(self, message: str) -> None:
        if self.cluster is not None:
            cluster = self.cluster
            self._spawn(cluster.events.emit(cluster.node_ref, "Normal", EVENT_REASON, message))

    def _spawn(self, coroutine: Coroutine[object, object, object]) -> asyncio.Task[object]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def root_tasks(ctx: AgentContext) -> list[RootTask]:
    """The shutdown capability's one root task."""
    controller = ShutdownController(
        config=ctx.config,
        node_name=ctx.node_name,
        paths=ctx.paths,
        metrics=ShutdownMetrics(ctx.registry),
        health=ctx.health,
        clock=ctx.clock,
        cluster=ctx.cluster,
        status=ctx.status,
    )
    return [RootTask(name="shutdown", run=controller.run, stop=controller.stop)]


def _logind_back(event: LogindEvent) -> bool:
    """A (re)connection with logind on the bus, or logind back after a restart."""
    if isinstance(event, BusConnected):
        return event.logind_present
    return isinstance(event, LogindOwnerChanged) and event.owner is not None
