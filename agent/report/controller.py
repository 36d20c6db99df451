"""The report controller: sample every few seconds, write the NodeReport when the policy says.

Two loops in one root task, on the event loop thread:
- the sampler reads the node in a worker thread every ``sampleInterval`` (on the injected
  clock), feeds the EWMA tracker and wakes the writer; it keeps going while the API server
  is down, so the tracker always holds the latest values;
- the writer wakes on a new sample, on a status-board change (gate, shutdown, swap drift:
  published by those controllers, so the write goes out at once, not at the next sample)
  and on its retry timer. It asks the policy (``agent.report.policy``) whether a write is
  due: a state change, a move of node usage or of one pod's (each pod's smoothed values as
  the report would carry them), or the heartbeat. It builds the document *when it writes*,
  so after an outage only the latest report is sent: there is no queue to drain, ever.

After each write attempt the record file (``agent.node.reportrecord``) is saved atomically
with the write's outcome and the status board's sections, for ``doctor`` and ``report``.

Writes are serialized by a lock: one in flight at most. ``stop`` (SIGTERM) takes the lock,
bounded by ``stopTimeout``, and writes ``agentStopped: true``; the first write of the next
start carries ``agentStopped: false`` again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import structlog

from agent import __version__
from agent.clock import Clock
from agent.config.report import ReportConfig
from agent.kube.backoff import Backoff, RetryPolicy
from agent.kube.errors import KubeError
from agent.kube.jsontypes import JsonObject
from agent.kube.reportwriter import NodeReportWriter
from agent.node.reportrecord import ReportRecord, save_report_record
from agent.report.document import (
    Capacity,
    Identity,
    board_sections,
    build_status,
    pod_entries,
    state_key,
)
from agent.report.metrics import ReportMetrics
from agent.report.policy import Observed, PodShares, Published, WritePolicy, WriteReason
from agent.report.sampling import NodeSampler, UsageSource
from agent.report.usage import UsageTracker
from agent.runtime.context import AgentContext
from agent.runtime.status import StatusBoard
from agent.runtime.supervisor import RootTask

_log = structlog.get_logger(subsystem="report")


class ReportSink(Protocol):
    async def write(self, status: JsonObject) -> int:
        """Send the status; return the bytes sent; ``KubeError`` on failure."""


class ReportController:
    def __init__(
        self,
        *,
        config: ReportConfig,
        boot_id: str,
        source: UsageSource,
        sink: ReportSink,
        board: StatusBoard,
        clock: Clock,
        metrics: ReportMetrics,
        pods: Callable[[], list[JsonObject] | None] = lambda: None,
        node: Callable[[], JsonObject | None] = lambda: None,
        record_path: Path | None = None,
        random_fraction: Callable[[], float] = random.random,
        retry_backoff: Backoff = Backoff(initial=1.0, cap=30.0),
    ) -> None:
        self.config = config
        self.identity = Identity(__version__, boot_id, config.heartbeat)
        self.source = source
        self.sink = sink
        self.board = board
        self.clock = clock
        self.metrics = metrics
        self.pods = pods
        self.node = node
        self.record_path = record_path
        self.random_fraction = random_fraction
        self.retry_backoff = retry_backoff
        self.policy = WritePolicy(
            threshold=config.threshold_percent / 100,
            heartbeat=config.heartbeat,
            jitter=config.heartbeat_jitter,
            min_interval=config.min_write_interval,
        )
        self.tracker = UsageTracker(weight=config.smoothing)
        self.published: Published | None = None
        self.record = ReportRecord()
        self._wake = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self._failures = 0
        self._retry_at: float | None = None
        self._stopping = False
        self._retry_task: asyncio.Task[None] | None = None

    # -- the root task ------------------------------------------------------------------

    async def run(self) -> None:
        unsubscribe = self.board.subscribe(lambda _snapshot: self._wake.set())
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._sample_loop())
                group.create_task(self._write_loop())
        finally:
            unsubscribe()
            self._cancel_retry()

    async def _sample_loop(self) -> None:
        # The second sample comes after a second at most: CPU rates need two, and the first
        # report (which also clears agentStopped) should not wait a whole interval.
        await self.sample_once()
        await self.clock.sleep(min(1.0, self.config.sample_interval))
        while True:
            await self.sample_once()
            await self.clock.sleep(self.config.sample_interval)

    async def sample_once(self) -> None:
        try:
            sample = await asyncio.to_thread(self.source.read)
        except OSError as error:
            _log.warning("cannot sample the node", error=str(error))
            return
        self.tracker.add(sample)
        self._wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.write_if_due()

    # -- deciding and writing -----------------------------------------------------------

    def observed(self) -> Observed | None:
        last = self.tracker.last
        usage = self.tracker.node_smoothed
        if last is None or usage is None:
            return None  # no CPU rate before the second sample
        node = last.node
        return Observed(
            cpu_fraction=usage.cpu_cores / node.cpus if node.cpus else 0.0,
            memory_fraction=(
                usage.memory_working_set / node.memory_total if node.memory_total else 0.0
            ),
            state=state_key(self.board.snapshot()),
            pods=self._pod_shares(node.cpus, node.memory_total),
        )

    def _pod_shares(self, cpus: int, memory: int) -> PodShares:
        """Each reported pod's smoothed CPU and memory as shares of the node's capacity, taken
        from the entries the report would carry (cgroups no pod claims are not in it)."""
        return {
            entry["uid"]: (
                entry["cpu"] / cpus if cpus else 0.0,
                entry["memory"] / memory if memory else 0.0,
            )
            for entry in pod_entries(self.tracker.pods_smoothed, self.pods())
        }

    async def write_if_due(self) -> WriteReason | None:
        """Write once if the policy asks for it; return why, ``None`` when nothing was due."""
        if self._stopping or (observed := self.observed()) is None:
            return None
        monotonic = self.clock.monotonic()
        failed = self._retry_at is not None
        reason = self.policy.decide(self.published, observed, monotonic, failed=failed)
        if reason is None:
            return None
        if reason is not WriteReason.STATE and failed and monotonic < (self._retry_at or 0.0):
            return None  # backing off; a state change still tries at once
        await self._write(reason, observed)
        return reason

    def document(self, *, agent_stopped: bool = False) -> JsonObject:
        last = self.tracker.last
        capacity = Capacity(
            cpus=last.node.cpus if last else 0,
            memory=last.node.memory_total if last else 0,
            swap=last.node.swap_total if last else 0,
        )
        return build_status(
            identity=self.identity,
            capacity=capacity,
            tracker=self.tracker,
            board=self.board.snapshot(),
            observed_time=self.clock.now(),
            node=self.node(),
            pods=self.pods(),
            agent_stopped=agent_stopped,
        )

    async def _write(self, reason: WriteReason, observed: Observed) -> bool:
        async with self._write_lock:
            if self._stopping:
                return False
            # Built now, inside the lock: whatever waited for the lock sends the latest.
            observed = self.observed() or observed
            ok = await self._send(reason.value, self.document())
            monotonic = self.clock.monotonic()
            if ok:
                self.published = Published(
                    cpu_fraction=observed.cpu_fraction,
                    memory_fraction=observed.memory_fraction,
                    state=observed.state,
                    at=monotonic,
                    next_heartbeat=self.policy.next_heartbeat(monotonic, self.random_fraction()),
                    pods=observed.pods,
                )
                self._failures, self._retry_at = 0, None
            else:
                self._failures += 1
                delay = RetryPolicy(self.retry_backoff).wait(self._failures)
                self._retry_at = monotonic + delay
                self._cancel_retry()
                self._retry_task = asyncio.get_running_loop().create_task(self._wake_after(delay))
            return ok

    def _cancel_retry(self) -> None:
        if self._retry_task is not None:
            self._retry_task.cancel()
            self._retry_task = None

    async def _wake_after(self, delay: float) -> None:
        await self.clock.sleep(delay)
        self._wake.set()

    async def _send(self, reason: str, status: JsonObject) -> bool:
        try:
            size = await self.sink.write(status)
        except KubeError as error:
            self.metrics.writes.labels(reason=reason, result="error").inc()
            self.record = ReportRecord(
                last_written=self.record.last_written,
                size_bytes=self.record.size_bytes,
                errors=self.record.errors + 1,
                last_error=f"{type(error).__name__}: {error}"[:300],
            )
            if self._failures == 0:
                _log.warning("cannot write the NodeReport; retrying", error=str(error))
            await self._save_record()
            return False
        now = self.clock.now()
        self.metrics.writes.labels(reason=reason, result="success").inc()
        self.metrics.size.set(size)
        self.metrics.last_write.set(now)
        self.record = ReportRecord(last_written=now, size_bytes=size)
        await self._save_record()
        return True

    async def _save_record(self) -> None:
        if self.record_path is None:
            return
        # The board as it is now (it may have moved while the write was in flight), so that
        # `kubelet-companion report` shows the latest gate, shutdown and swap state.
        self.record = dataclasses.replace(
            self.record,
            sections=board_sections(self.board.snapshot()),
            sections_time=self.clock.now(),
        )
        try:
            await asyncio.to_thread(save_report_record, self.record_path, self.record)
        except OSError as error:
            _log.warning("cannot save the report record", error=str(error))

    # -- stopping -----------------------------------------------------------------------

    async def stop(self) -> None:
        """Write ``agentStopped: true`` (bounded by ``stopTimeout``); nothing after it."""
        self._stopping = True
        self._cancel_retry()
        if self.tracker.last is None:
            return
        try:
            async with asyncio.timeout(self.config.stop_timeout):
                async with self._write_lock:
                    await self._send("stop", self.document(agent_stopped=True))
        except TimeoutError:
            _log.warning("could not mark the NodeReport stopped in time")


def root_tasks(ctx: AgentContext) -> list[RootTask]:
    """The report capability: one controller, in cluster mode only."""
    config = ctx.config.report
    if not config.enabled:
        return []
    if ctx.cluster is None:
        _log.info("NodeReport off: no cluster (node-only mode); see `kubelet-companion report`")
        return []
    state = ctx.cluster.node_state
    controller = ReportController(
        config=config,
        boot_id=ctx.facts.kernel.boot_id or "",
        source=NodeSampler(ctx.paths, ctx.config.memory_swap, ctx.clock.monotonic),
        sink=NodeReportWriter(ctx.cluster.kube, ctx.node_name, node_object=state.node_object),
        board=ctx.status,
        clock=ctx.clock,
        metrics=ReportMetrics(ctx.registry),
        pods=state.pod_list,
        node=state.node_object,
        record_path=ctx.config.report_state_file,
    )
    # Not critical: a report that keeps failing must never take the shutdown handling down
    # with it (the supervisor marks it failed in /healthz instead of exiting).
    return [RootTask(name="report", run=controller.run, stop=controller.stop, critical=False)]
