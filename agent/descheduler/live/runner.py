"""One cycle of the running process: plan from the caches, then print it or carry it out.

Planning is the pure cycle's (``core.cycle.run_cycle``), on a worker thread: the snapshot is
immutable, so the caches keep following their watches meanwhile; this process owns the
interpreter, so ``plan_cycle`` pauses its cyclic garbage collector around the cycle. It
carries our record of the taints in flight, read from the Lease each cycle
(``recordedtaints``): the plugins believe that, never a node's mark (``taintmarks`` logs and
counts the marks it ignores). Carrying it out is taints first (``taintactions``: a rescue's
node is tainted before its pods go, and a node being emptied before its pods go), then
evictions (``evictor``), the ones a budget holds going as it allows; then the churn guard's
memory, the metrics, a Warning Event for a plugin that failed, and one log line a person
reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TextIO

import structlog

from agent.clock import Clock
from agent.descheduler.cache.state import ClusterState
from agent.descheduler.core.cycle import CycleOptions, run_cycle
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.live.budgetwatch import BudgetWatch
from agent.descheduler.live.evictor import EvictionResult, LiveEvictor
from agent.descheduler.live.metrics import (
    RESULT_BLOCKED_BY_IMPLICIT_BUDGET,
    RESULT_BLOCKED_BY_PDB,
    RESULT_NODE_BELOW_TARGET,
    DeschedulerMetrics,
)
from agent.descheduler.live.taintactions import TaintActions, emptying_nodes
from agent.descheduler.live.taintmarks import UnrecordedMarks
from agent.descheduler.live.triggers import CycleSchedule
from agent.descheduler.live.usagefeed import UsageFeed
from agent.descheduler.model.cluster import ClusterSnapshot
from agent.descheduler.model.taintrecord import TaintRecord
from agent.descheduler.options import DeschedulerOptions
from agent.descheduler.plan.render import render_json, render_table
from agent.descheduler.plan.shape import Plan, PlannedEviction
from agent.kube.errors import KubeError, LeadershipLost
from agent.kube.events import EventSink, ObjectRef
from agent.kube.evictionmemory import EvictionsMemory
from agent.kube.leaderelection import LeaderElector
from agent.runtime.collector import collector_paused

CYCLE_FAILED = "DeschedulingFailed"
"""The reason of the Warning Event a cycle posts when a plugin or a profile failed."""

_log = structlog.get_logger(subsystem="descheduler")


class Descheduler:
    """One process's cycles: plan from the caches, then print or evict."""

    def __init__(
        self,
        policy: DeschedulerPolicy,
        options: DeschedulerOptions,
        state: ClusterState,
        *,
        evictor: LiveEvictor,
        metrics: DeschedulerMetrics,
        clock: Clock,
        out: TextIO,
        elector: LeaderElector | None = None,
        memory: EvictionsMemory | None = None,
        taint_actions: TaintActions | None = None,
        events: EventSink | None = None,
        subject: ObjectRef | None = None,
        budgets: BudgetWatch | None = None,
        marks: UnrecordedMarks | None = None,
        usage_feed: UsageFeed | None = None,
    ) -> None:
        self.policy = policy
        self.options = options
        self.state = state
        self.evictor = evictor
        self.metrics = metrics
        self.clock = clock
        self.out = out
        self.elector = elector
        self.memory = memory
        self.owner_evictions: dict[str, float] = {}
        """The churn guard's memory when it is not kept on a Lease."""
        self.last_plan: Plan | None = None
        self.last_results: list[EvictionResult] = []
        self.taint_actions = taint_actions
        """Applies the plan's taints (rescue, out-of-service); ``None``: no taints at all."""
        self._leftovers_checked = False
        self.events = events
        self.subject = subject
        """What the cycle's own Warning Events are about: this replica's Pod, else its Lease."""
        self.budgets = budgets
        """The budgets' watch, which held evictions wait on; ``None``: they are not held."""
        self.marks = marks or UnrecordedMarks()
        self.usage_feed = usage_feed
        """Reads the metrics sources the policy's plugins need before each cycle; ``None``
        when they need none."""

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader

    async def cycle(self) -> Plan | None:
        """Run one cycle; ``None`` when this replica is a follower and did nothing."""
        if not self.options.dry_run and not self.leading:
            self.metrics.cycles.labels("follower").inc()
            return None
        started = self.clock.monotonic()
        if not self.options.dry_run and not self._leftovers_checked:
            await self._take_over_leftovers()
        record = await self._taint_record()
        owner_evictions = await self._recall()
        snapshot = dataclasses.replace(await self._snapshot(), taint_record=record)
        if self.taint_actions is not None:
            self.marks.check(snapshot.nodes, record, self.taint_actions.taints.released)
        options = CycleOptions(
            owner_evictions=owner_evictions,
            monotonic=self.clock.monotonic,
            implicit_budgets=self.options.implicit_rollout_budgets,
        )
        plan = await asyncio.to_thread(plan_cycle, self.policy, snapshot, options)
        self._count_fallbacks(plan)
        for run in plan.durations:
            self.metrics.strategy_duration.labels(run["plugin"], run["profile"]).observe(
                float(run["seconds"])
            )
        if self.options.dry_run:
            self.out.write(
                render_json(plan) if self.options.output == "json" else render_table(plan)
            )
            self.out.flush()
            self.metrics.cycles.labels("failed" if plan.errors else "dry-run").inc()
        else:
            for refused in plan.limit_refusals:
                # Upstream counts a limit's refusal with the limit's text as the result.
                self.metrics.evicted(
                    refused["result"],
                    strategy=refused["strategy"],
                    profile=refused["profile"],
                    namespace=refused["namespace"],
                    node=refused["node"],
                )
            self.last_results = await self._execute(plan, snapshot)
            await self._remember(snapshot, owner_evictions, self.last_results)
            self.metrics.cycles.labels(_outcome(plan)).inc()
        if plan.errors:
            await self._report_failures(plan)
        self.metrics.loop_duration.observe(self.clock.monotonic() - started)
        self.last_plan = plan
        return plan

    async def _snapshot(self) -> ClusterSnapshot:
        """The caches' snapshot, with what the metrics sources said just now."""
        now = self.clock.now()
        if self.usage_feed is None:
            return self.state.snapshot(now)
        prometheus, kubernetes = await self.usage_feed.read(now)
        return dataclasses.replace(
            self.state.snapshot(now), prometheus=prometheus, kubernetes_metrics=kubernetes
        )

    async def _report_failures(self, plan: Plan) -> None:
        """A plugin or profile that failed: an error line and a Warning Event each."""
        for error in plan.errors:
            _log.error("descheduling cycle incomplete", error=error)
            if self.events is not None and self.subject is not None:
                await self.events.emit(self.subject, "Warning", CYCLE_FAILED, error)

    async def _execute(self, plan: Plan, snapshot: ClusterSnapshot) -> list[EvictionResult]:
        """Taints first (a rescue's node is tainted before its pods go), then evictions; the
        ones a budget holds go as it allows, until the hold ends. Emptying taints stay on
        until the replacements of the pods that left are bound (``emptying``)."""
        actions = self.taint_actions if plan.taints else None
        failed = await actions.apply(plan.taints) if actions is not None else set()
        allowed, held = plan.at_once, plan.held
        if actions is not None:
            # A held eviction of a rescue goes later: never without its taint either.
            allowed, held = actions.sendable(allowed, failed), actions.sendable(held, failed)
        if self.budgets is not None:
            self.budgets.track(plan.implicit_budgets)
        results = await self.evictor.evict_all(
            allowed,
            held=held,
            refused=plan.refused,
            budgets=self.budgets,
            hold_until=self.clock.monotonic() + self.options.hold_seconds,
        )
        if actions is not None:
            await actions.report(plan.taints, results, failed)
            if emptied := emptying_nodes(plan.taints):
                gone = {r.eviction.uid for r in results if r.evicted}
                evicted = [p for n in emptied for p in snapshot.pods_on(n) if p.uid in gone]
                actions.emptying.track(evicted, snapshot)
        return results

    async def _take_over_leftovers(self) -> None:
        """Once, as leader: take over the taints an earlier run (or leader) left in flight,
        as our record names them: rescues adopted, emptying taints removed (``leftovers``)."""
        actions = self.taint_actions
        if actions is None:
            self._leftovers_checked = True
            return
        try:
            record = await actions.taints.load()
        except KubeError as error:
            _log.warning("taint record not read; leftovers are taken over later", error=str(error))
            return
        self._leftovers_checked = True
        actions.tracker.adopt(record, self.clock.now())
        await actions.emptying.remove_leftovers(record)

    async def _taint_record(self) -> TaintRecord:
        """Our record of the taints in flight, read afresh; on a failed read, the record as
        this process last knew it."""
        actions = self.taint_actions
        if actions is None:
            return TaintRecord()
        try:
            return await actions.taints.load()
        except KubeError as error:
            _log.warning("taint record not read; using this process's", error=str(error))
            return actions.taints.record

    async def settle_taints(self) -> bool:
        """Remove rescue and emptying taints that are done; ``True`` while some are still
        in place."""
        actions = self.taint_actions
        if actions is None:
            return False
        if actions.tracker.pending:
            await actions.tracker.settle(self.state.pods.get)
        if actions.emptying.pending:
            await actions.emptying.settle(self.state.pods.store.values)
        return actions.tracker.pending or actions.emptying.pending

    async def release_emptying(self) -> None:
        """At a graceful stop: the emptying taints this replica added come off now, whether
        it still leads or not (nobody else tracks them), and no new one goes on."""
        if self.taint_actions is not None:
            await self.taint_actions.emptying.close()

    def leading_again(self) -> None:
        """Leadership (re)gained: the next cycle sweeps the leftovers again (a leader that
        came and went meanwhile may have left some)."""
        self._leftovers_checked = False

    def _count_fallbacks(self, plan: Plan) -> None:
        fallbacks = [facts for facts in plan.nodes if facts.get("fallback")]
        for facts in fallbacks:
            self.metrics.usage_fallback.labels(str(facts["fallback"])).inc()
        if fallbacks:
            _log.info(
                "usage fell back to requests",
                nodes=len(fallbacks),
                sample=[str(facts.get("node")) for facts in fallbacks[:5]],
            )

    def _count(self, eviction: PlannedEviction, result: str) -> None:
        self.metrics.evicted(
            result,
            strategy=eviction.plugin,
            profile=eviction.profile,
            namespace=eviction.namespace,
            node=eviction.node,
        )

    async def _recall(self) -> dict[str, float]:
        if self.memory is None or not self.leading:
            return dict(self.owner_evictions)
        try:
            return await self.memory.load()
        except KubeError as error:
            _log.warning("churn guard memory not read; using this process's", error=str(error))
            return dict(self.owner_evictions)

    async def _remember(
        self,
        snapshot: ClusterSnapshot,
        before: Mapping[str, float],
        results: list[EvictionResult],
    ) -> None:
        """Owners that lost a pod to us now, added to the memory the next cycle reads."""
        remembered = dict(before)
        for result in results:
            if not result.evicted:
                continue
            eviction = result.eviction
            for pod in snapshot.pods_on(eviction.node):
                if pod.uid == eviction.uid and pod.controller is not None:
                    remembered[pod.controller.uid] = snapshot.now
        self.owner_evictions = remembered
        self.metrics.churn_guard_owners.set(len(remembered))
        if self.memory is not None and remembered != dict(before):
            try:
                await self.memory.save(remembered)
            except (KubeError, LeadershipLost) as error:
                _log.warning("churn guard memory not saved", error=str(error))


def plan_cycle(
    policy: DeschedulerPolicy, snapshot: ClusterSnapshot, options: CycleOptions | None = None
) -> Plan:
    """``run_cycle`` with the process's cyclic garbage collector paused (``collector_paused``:
    the cycle's many short-lived containers hold no cycles; at 5,000 nodes the collector's walks
    over them were a quarter of the planning time). The pause is process-wide, so the process
    makes it, not the pure planner; the watch threads run without the collector meanwhile."""
    with collector_paused():
        return run_cycle(policy, snapshot, options)


def cycle_summary(plan: Plan, results: Sequence[EvictionResult]) -> dict[str, object]:
    """What one cycle did, for its log line: evictions by profile and plugin, what a budget
    still refused, what was dropped as no longer needed, what failed."""
    evicted: dict[str, int] = {}
    for result in results:
        if result.evicted:
            where = f"{result.eviction.profile}/{result.eviction.plugin}"
            evicted[where] = evicted.get(where, 0) + 1
    blocked = sum(1 for r in results if r.result in BLOCKED)
    dropped = sum(1 for r in results if r.result == RESULT_NODE_BELOW_TARGET)
    return {
        "evicted": dict(sorted(evicted.items())),
        "blocked": blocked,
        "dropped": dropped,
        "failed": sum(1 for r in results if not r.evicted and r.result not in NOT_FAILED),
        "plugin_errors": len(plan.errors),
    }


BLOCKED = frozenset({RESULT_BLOCKED_BY_PDB, RESULT_BLOCKED_BY_IMPLICIT_BUDGET})
"""Results of evictions a budget (a PDB or an implicit one) still held when the cycle ended."""
NOT_FAILED = BLOCKED | {RESULT_NODE_BELOW_TARGET}
"""Results of evictions not made that did not fail: still held, or no longer needed."""


def log_cycle(
    descheduler: Descheduler,
    seconds: float,
    schedule: CycleSchedule,
    clock: Clock,
    one_shot: bool,
) -> None:
    """One info line per cycle a person reads: what it did, how long it took, what is next."""
    plan = descheduler.last_plan
    if plan is None:
        return
    if descheduler.options.dry_run:
        summary: dict[str, object] = {"planned": plan.summary()["planned"]}
    else:
        summary = cycle_summary(plan, descheduler.last_results)
    due = schedule.next_start()
    _log.info(
        "descheduling cycle done",
        **summary,
        skipped=plan.skipped or None,
        seconds=round(seconds, 2),
        next_cycle_in=None if one_shot or due is None else round(due - clock.monotonic(), 1),
    )


def _outcome(plan: Plan) -> str:
    """The ``cycles`` metric's outcome of a cycle that evicted."""
    if plan.errors:
        return "failed"
    return "skipped" if plan.skipped else "planned"
