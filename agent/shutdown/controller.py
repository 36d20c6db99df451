"""The shutdown controller: logind events in, runs of the phase plan and lock changes out.

One task owns all decisions, so no two of them race: it reads logind's events from the
session queue one at a time. The shutdown itself runs in a task of its own (``ShutdownRun``)
so that a cancellation, a logind restart or a lost bus can still be handled while the
phases are under way. The lock and the delay are ``InhibitorGuard``'s (never two locks),
the taint ``TaintKeeper``'s (the newest wish wins), the record ``RecordStore``'s.

What happens when:
- start: load the state file (the metrics show the last shutdown), connect to the bus, and
  decide about what the file holds: resume an unfinished shutdown, clear one the node
  rebooted from or that was cancelled meanwhile, or start one logind is already preparing;
- bus connected, or logind (re)appeared on it: ``InhibitorGuard.ensure_lock``;
- ``PrepareForShutdown(true)``: persist a record, taint, post the Node Event, run the phases;
- ``PrepareForShutdown(false)``: stop any run, undo the taint, take a lock again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from pathlib import Path
from typing import Literal

import structlog

from agent.config import AgentConfig
from agent.kube.events import ObjectRef
from agent.logind.session import LogindEvent, PrepareForShutdown
from agent.node.kernel import read_boot_id
from agent.node.paths import HostPaths
from agent.runtime.clock import Clock
from agent.runtime.context import AgentContext, KubeContext
from agent.runtime.supervisor import RootTask
from agent.shutdown.deadlines import Deadlines, deadlines_from
from agent.shutdown.inhibitor import InhibitorGuard
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.phases import budget_seconds
from agent.shutdown.record import ShutdownRecord, ShutdownStatus, begin_record
from agent.shutdown.run import ClusterAccess, ShutdownRun
from agent.shutdown.startup import StartupAction, decide_startup
from agent.shutdown.store import RecordStore
from agent.shutdown.taint import TaintKeeper
from agent.telemetry.health import Health

EVENT_REASON = "Shutdown"
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
    ) -> None:
        self.options = config.shutdown
        self.buckets = config.shutdown_buckets
        self.budget = budget_seconds(self.buckets)
        self.paths = paths
        self.metrics = metrics
        self.clock = clock
        self.store = RecordStore(Path(config.shutdown_state_file))
        self.logind = InhibitorGuard(
            options=self.options,
            budget=self.budget,
            metrics=metrics,
            health=health,
            enabled=self.enabled,
        )
        self.cluster = self._cluster_access(cluster, node_name)
        self.record: ShutdownRecord | None = None
        self.boot_id: str | None = None
        self._run: ShutdownRun | None = None
        self._run_task: asyncio.Task[ShutdownRecord] | None = None
        self._tasks: set[asyncio.Task[object]] = set()

    @property
    def enabled(self) -> bool:
        """kubelet's rule: a total of zero seconds turns graceful shutdown off."""
        return self.budget > 0

    def _cluster_access(self, cluster: KubeContext | None, node: str) -> ClusterAccess | None:
        if cluster is None:
            return None
        return ClusterAccess(
            node_state=cluster.node_state,
            kube=cluster.kube,
            taint=TaintKeeper(
                cluster.patcher, cluster.node_state.node_object, monotonic=self.clock.monotonic
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
        try:
            if not self.enabled:
                _log.info("graceful node shutdown is off (no shutdown grace period configured)")
                await self._apply_startup(decide_startup(self.record, self.boot_id, None))
                await asyncio.Event().wait()  # idle: a root task must not return
            self._spawn(self.logind.session.run())
            pending = await self.logind.first_contact()
            preparing = await self.logind.preparing_for_shutdown()
            await self._apply_startup(decide_startup(self.record, self.boot_id, preparing))
            for event in pending:
                await self._handle(event)
            await self._event_loop()
        finally:
            await self._stop_run()
            self.logind.close()
            for task in list(self._tasks):
                task.cancel()
            if self.cluster is not None:
                self.cluster.taint.close()

    async def stop(self) -> None:
        """Graceful stop: end any run (its record stays ``running`` so a restart resumes)."""
        await self._stop_run()
        self.logind.close()

    async def _event_loop(self) -> None:
        while True:
            timeout = RECHECK_SECONDS if self.logind.lock_is_fine else RETRY_SECONDS
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
            # races with a queued event, and the task would then never stop.
            try:
                async with asyncio.timeout(timeout):
                    event = await self.logind.session.events.get()
            except TimeoutError:
                await self.logind.ensure_lock(reason="periodic check")
                continue
            await self._handle(event)

    async def _handle(self, event: LogindEvent) -> None:
        if isinstance(event, PrepareForShutdown):
            if event.active:
                await self._begin_shutdown()
            else:
                await self._cancel_shutdown()
        else:
            await self.logind.on_bus_event(event)

    # -- start-up -----------------------------------------------------------------------

    async def _apply_startup(self, action: StartupAction) -> None:
        record = self.record
        if action is StartupAction.BEGIN:
            if self.enabled:
                _log.warning("logind is already preparing for shutdown; starting the shutdown")
                await self._begin_shutdown()
            return
        if record is None or action is StartupAction.NOTHING:
            return
        _log.info(
            "found an unfinished shutdown in the state file",
            action=action.value,
            status=record.status.value,
            same_boot=record.boot_id == self.boot_id,
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

    async def _begin_shutdown(self) -> None:
        if self._run_task is not None and not self._run_task.done():
            _log.info("PrepareForShutdown(true) while a shutdown runs; ignored")
            return
        record = begin_record(
            self.buckets,
            start_time=self.clock.now(),
            start_monotonic=self.clock.monotonic(),
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
        )
        await self.store.save(record)  # first, so that a restarted agent can resume
        self._emit_event("Shutdown manager detected shutdown event")
        self._start_run(record, resumed=False)

    def _start_run(self, record: ShutdownRecord, *, resumed: bool) -> None:
        deadlines = self._deadlines(record)
        if self.cluster is not None:
            self.cluster.taint.want(True, deadline=deadlines.budget_end)
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
            resumed=resumed,
        )
        self._run = run
        self._run_task = asyncio.create_task(run.execute(), name="shutdown-run")
        self._run_task.add_done_callback(self._run_ended)

    def _deadlines(self, record: ShutdownRecord) -> Deadlines:
        """The record's deadlines on our monotonic clock (the wall clock across boots)."""
        start = record.start_monotonic
        if start is None or record.boot_id != self.boot_id:
            start = self.clock.monotonic() - (self.clock.now() - record.start_time)
        return deadlines_from(start, [phase.budget_seconds for phase in record.phases])

    def _run_ended(self, task: asyncio.Task[ShutdownRecord]) -> None:
        if task.cancelled():
            return
        if (error := task.exception()) is not None:
            # A bug, not an API failure (those are handled inside). Do not hold the node.
            _log.error("the shutdown run failed; releasing the lock", error=repr(error))
            self.logind.keeper.release()
            return
        self.record = task.result()

    async def _stop_run(self, why: Literal["cancelled", "stopped"] = "stopped") -> None:
        task, run = self._run_task, self._run
        self._run_task = None
        if task is None or run is None:
            return
        if not task.done():
            run.halted = why
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.record = run.record

    async def _cancel_shutdown(self) -> None:
        _log.info("shutdown cancelled by logind (PrepareForShutdown(false))")
        await self._stop_run("cancelled")
        record = self.record
        if record is not None and record.status in (
            ShutdownStatus.RUNNING,
            ShutdownStatus.FINISHED,
        ):
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

    def _spawn(self, coroutine: Coroutine[object, object, object]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


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
    )
    return [RootTask(name="shutdown", run=controller.run, stop=controller.stop)]
