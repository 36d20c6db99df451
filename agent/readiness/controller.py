"""The readiness gate's controller: watch events in, guarded taint patches and Events out.

Every event from any input marks the gate dirty; the loop then judges one consistent
snapshot with the pure core (``checks`` + ``gate``) and applies at most one write. Events
arriving during a write coalesce into the next evaluation, so a burst of pod updates costs
one evaluation, not one each. Besides events, the loop wakes only for a hold timer
(continuous mode), a write retry, or the slow safety resync; it never polls the API server.

Concurrency: everything runs on the event loop. Watch listeners only set an ``asyncio.Event``
and feed the write expectation; they never block. Events are posted from separate tasks so a
slow Events API cannot delay a taint removal.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

import structlog

from agent.clock import Clock, sleep_or_set
from agent.kube.backoff import Backoff, RetryPolicy, retry_after_of
from agent.kube.errors import KubeError
from agent.kube.events import EventSink, ObjectRef
from agent.kube.jsontypes import JsonObject
from agent.kube.patches import Builder, NodeWriter, Op
from agent.kubesemantics.timestamps import rfc3339
from agent.readiness import node_writes, notices
from agent.readiness.checks import Assessment
from agent.readiness.expectations import WriteExpectation
from agent.readiness.gate import Action, Decision, GateState, GateView, decide
from agent.readiness.inputs import Inputs, WatchedInputs
from agent.readiness.metrics import ReadinessMetrics
from agent.readiness.settings import GateSettings, evaluate
from agent.runtime.context import AgentContext
from agent.runtime.status import ReadinessStatus, StatusBoard
from agent.runtime.supervisor import RootTask
from agent.runtime.watches import watch_task

_log = structlog.get_logger(subsystem="readiness")

_OPERATIONS = {Action.LIFT: "remove", Action.ADD: "add", Action.MARK_COMPLETED: "mark-completed"}


class _CountingBuilder:
    """Wraps a builder to learn how many attempts a write took and whether it was a no-op."""

    def __init__(self, build: Builder) -> None:
        self.build = build
        self.calls = 0
        self.last_ops: list[Op] = []

    def __call__(self, node: JsonObject) -> list[Op]:
        self.calls += 1
        self.last_ops = self.build(node)
        return self.last_ops


def _summary(assessment: Assessment) -> str:
    parts = [f"daemonset:{c.name}" for c in assessment.unscheduled]
    parts += [f"pod:{c.name}" for c in assessment.unready]
    parts += [f"csi:{c.driver}" for c in assessment.missing_drivers]
    return ",".join(parts)


class ReadinessController:
    def __init__(
        self,
        *,
        node_name: str,
        settings: GateSettings,
        inputs: Inputs,
        writer: NodeWriter,
        events: EventSink,
        metrics: ReadinessMetrics,
        clock: Clock,
        retry_backoff: Backoff = Backoff(initial=1.0, cap=30.0),
        status: StatusBoard | None = None,
    ) -> None:
        self.node_name = node_name
        self.status = status
        self.settings = settings
        self.inputs = inputs
        self.writer = writer
        self.events = events
        self.metrics = metrics
        self.clock = clock
        self.retry_policy = RetryPolicy(retry_backoff)
        self.state = GateState()
        self.last_assessment: Assessment | None = None
        self.last_decision: Decision | None = None
        self._expectation = WriteExpectation()
        self._throttle = notices.Throttle(settings.event_interval)
        self._dirty = asyncio.Event()
        self._input_events = 0  # what the input_events counter says, readable without a scrape
        self._failures = 0
        self._retry_at: float | None = None
        self._reported: tuple[str, str] | None = None
        self._missing_node_logged = False
        self._posting: set[asyncio.Task[Any]] = set()

    # -- the loop -------------------------------------------------------------------

    async def run(self) -> None:
        unsubscribe_node = self.inputs.subscribe_node(self._expectation.observe)
        unsubscribe = self.inputs.subscribe(self._on_event)
        try:
            await self.inputs.wait_synced()
            _log.info(
                "readiness gate watching",
                taint=self.settings.keys.taint,
                mode=self.settings.mode,
                namespaces=list(self.settings.namespaces),
            )
            while True:
                self._dirty.clear()
                # Listeners run on this loop, so every event counted now is in the snapshot
                # this step judges: once it finishes, the gauge says those were handled.
                seen = self._input_events
                wake_at = await self.step()
                self.metrics.evaluated_input_events.set(seen)
                await self._wait(wake_at)
        finally:
            unsubscribe()
            unsubscribe_node()
            for task in list(self._posting):
                task.cancel()

    def _on_event(self, kind: str, obj: JsonObject | None) -> None:  # noqa: ARG002 - Listener signature
        self._input_events += 1
        self.metrics.input_events.inc()
        self._dirty.set()

    async def _wait(self, wake_at: float) -> None:
        delay = wake_at - self.clock.monotonic()
        if self._dirty.is_set() or delay <= 0:
            # Due now: yield once all the same, so a step that wants to run again at once
            # (an event, a retry that is due) can never keep the loop from its other tasks.
            await asyncio.sleep(0)
            return
        await sleep_or_set(self.clock, delay, self._dirty)

    # -- one evaluation -------------------------------------------------------------

    async def step(self) -> float:
        """Judge the current snapshot, apply at most one write; return when to wake up."""
        now = self.clock.monotonic()
        resync_at = now + self.settings.resync_period
        snapshot = self.inputs.snapshot()
        node = self._expectation.current(snapshot.node, now)
        if node is None:
            if not self._missing_node_logged:
                _log.warning("our Node object does not exist; the gate waits for it")
                self._missing_node_logged = True
            self.metrics.gate_held.set(0)
            return resync_at
        self._missing_node_logged = False
        assessment, view = evaluate(self.settings, snapshot, node)
        decision = decide(
            mode=self.settings.mode,
            hold_time=self.settings.hold_time,
            ready=assessment.ready,
            view=view,
            state=self.state,
            now=now,
        )
        self.state = decision.state
        if self.last_decision is None or decision.why != self.last_decision.why:
            _log.info("gate", state=decision.why, tainted=view.tainted, completed=view.completed)
        self.last_assessment, self.last_decision = assessment, decision
        self._record(assessment, view)
        if view.tainted or (self.settings.mode == "continuous" and not assessment.ready):
            self._warn(assessment, node, now)
        if decision.action is Action.NONE:
            # A write that failed earlier is moot once there is nothing to write: its retry
            # time (soon in the past) must not wake the loop again and again.
            self._failures, self._retry_at = 0, None
        else:
            if self._retry_at is not None and now < self._retry_at:
                return min(self._retry_at, resync_at)
            await self._apply(decision, node, assessment)
        wakes = [resync_at, decision.wake_at, self._retry_at]
        return min(wake for wake in wakes if wake is not None)

    def _publish(self, held: bool, assessment: Assessment) -> None:
        if self.status is not None:
            waiting = tuple(part for part in _summary(assessment).split(",") if part)
            self.status.publish_readiness(ReadinessStatus(held, waiting if held else ()))

    def _record(self, assessment: Assessment, view: GateView) -> None:
        self.metrics.gate_held.set(1 if view.tainted else 0)
        self._publish(view.tainted, assessment)
        self.metrics.missing.labels(kind="daemonset").set(len(assessment.unscheduled))
        self.metrics.missing.labels(kind="pod").set(len(assessment.unready))
        self.metrics.missing.labels(kind="csi_driver").set(len(assessment.missing_drivers))
        self.metrics.intolerant.set(len(assessment.intolerant))
        reported = (_summary(assessment), ",".join(c.name for c in assessment.intolerant))
        if reported == self._reported:
            return
        self._reported = reported
        for check in assessment.intolerant:
            _log.warning(
                "critical DaemonSet does not tolerate the gate taint; it cannot get a pod here "
                "while the gate is held, so it does not hold the gate",
                daemonset=check.name,
                taint=self.settings.keys.taint,
            )
        if assessment.ready:
            _log.info("critical components ready", tainted=view.tainted)
        else:
            _log.info(
                "waiting for critical components",
                tainted=view.tainted,
                daemonsets=[c.name for c in assessment.unscheduled],
                pods=[f"{c.name}: {c.detail}" for c in assessment.unready],
                csi_drivers=[c.driver for c in assessment.missing_drivers],
            )

    # -- writes ---------------------------------------------------------------------

    def _builder(self, action: Action) -> Builder:
        completed_at = rfc3339(self.clock.now())
        if action is Action.LIFT:
            return node_writes.lift(self.settings.keys.taint, completed_at)
        if action is Action.ADD:
            return node_writes.add(self.settings.keys.taint)
        return node_writes.mark_completed(completed_at)

    async def _apply(self, decision: Decision, node: JsonObject, assessment: Assessment) -> None:
        operation = _OPERATIONS[decision.action]
        build = _CountingBuilder(self._builder(decision.action))
        try:
            result = await self.writer.update(build, what=f"readiness {operation}", node=node)
        except KubeError as error:
            self._count(operation, "error", build.calls)
            self._failures += 1
            delay = self.retry_policy.wait(self._failures, retry_after=retry_after_of(error))
            self._retry_at = self.clock.monotonic() + delay
            _log.warning(
                "gate write failed; retrying later",
                operation=operation,
                error=str(error),
                retry_in=round(delay, 2),
            )
            return
        self._failures, self._retry_at = 0, None
        if not build.last_ops:
            self._count(operation, "noop", build.calls)
            _log.info("gate write had nothing to do", operation=operation, why=decision.why)
            return
        self._count(operation, "success", build.calls)
        self._expectation.expect(result, self.clock.monotonic())
        self.metrics.gate_held.set(1 if decision.action is Action.ADD else 0)
        self._publish(decision.action is Action.ADD, assessment)
        self._after_write(decision, node, assessment)

    def _count(self, operation: str, result: str, calls: int) -> None:
        self.metrics.taint_operations.labels(operation=operation, result=result).inc()
        if calls > 1:
            retried = self.metrics.taint_operations.labels(operation=operation, result="retried")
            retried.inc(calls - 1)

    def _after_write(self, decision: Decision, node: JsonObject, assessment: Assessment) -> None:
        taint = self.settings.keys.taint
        if decision.action is Action.LIFT:
            waited = self._waited(node)
            if waited is not None:
                self.metrics.set_wait(waited)
            _log.info("gate taint removed", taint=taint, waited_seconds=waited, why=decision.why)
            self._post(node, notices.lifted(taint, waited))
        elif decision.action is Action.ADD:
            _log.warning("gate taint added back", taint=taint, why=decision.why)
            self._post(node, notices.readded(taint, assessment, self.settings.hold_time))
        else:
            _log.info("bootstrap marked completed", why=decision.why)

    def _waited(self, node: JsonObject) -> float | None:
        created = (node.get("metadata") or {}).get("creationTimestamp")
        born = node_writes.parse_time(str(created)) if created else None
        return max(0.0, self.clock.now() - born) if born is not None else None

    # -- events ---------------------------------------------------------------------

    def _warn(self, assessment: Assessment, node: JsonObject, now: float) -> None:
        for notice in notices.warnings_for(assessment, self.settings.keys.taint):
            if self._throttle.allow(notice.reason, now):
                self._post(node, notice)

    def _post(self, node: JsonObject, notice: notices.Notice) -> None:
        metadata = node.get("metadata") or {}
        involved = ObjectRef.node(self.node_name, str(metadata.get("uid") or ""))
        emit: Coroutine[Any, Any, bool] = self.events.emit(
            involved,
            "Warning" if notice.warning else "Normal",
            notice.reason,
            notice.message,
            min_interval=self.settings.event_interval if notice.warning else 0.0,
        )
        task = asyncio.ensure_future(emit)
        self._posting.add(task)
        task.add_done_callback(self._posting.discard)

    async def drain_events(self) -> None:
        """Wait for Events in flight (tests and graceful stop)."""
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._posting)


def root_tasks(ctx: AgentContext) -> list[RootTask]:
    """The gate's watches (gating ``/readyz`` on their sync) and its controller."""
    config = ctx.config.readiness
    if not config.enabled:
        return []
    if ctx.cluster is None:
        _log.info("readiness gate off: no cluster (node-only mode)")
        return []
    settings = GateSettings.from_config(config)
    inputs = WatchedInputs(
        ctx.cluster.node_state,
        ctx.cluster.api,
        node_name=ctx.node_name,
        namespaces=settings.namespaces,
        label_selector=settings.keys.label_selector,
        watch_timeout=ctx.config.kube.watch_timeout,
        read_timeout=ctx.config.kube.watch_read_timeout,
    )
    controller = ReadinessController(
        node_name=ctx.node_name,
        settings=settings,
        inputs=inputs,
        writer=ctx.cluster.patcher,
        events=ctx.cluster.events,
        metrics=ReadinessMetrics(ctx.registry),
        clock=ctx.clock,
        status=ctx.status,
    )
    tasks = [watch_task(reflector, ctx.health) for reflector in inputs.reflectors]
    tasks.append(RootTask(name="readiness-gate", run=controller.run, stop=controller.drain_events))
    return tasks
