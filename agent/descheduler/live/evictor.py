"""Sending a plan's evictions through the eviction API: in parallel, within limits, and the
held ones when their budgets allow.

Upstream evicts one pod at a time (about 160/s on our bench machine). Here up to
``concurrency`` Evictions are in flight at once, each first taking a token from the
client's QPS bucket. The limits (total, per node, per namespace) were checked when the
plan was made, so concurrency can never exceed them; this module only decides how fast.

Order: allowed evictions *start* in the plan's order (the pool admits them one by one, in
order); they may finish in any order. Results, as upstream: 429 (a PodDisruptionBudget, or
throttling that outlasted our retries) and 404 (the pod is gone) count as not evicted and
the run goes on; 5xx and timeouts are retried with backoff a few times.

**Held evictions** (a budget refused them when the plan was made; ``planner``) are sent per
budget, in the plan's order, alongside the rest of the plan once the budget's allowed ones were
answered (they must not race them for the same disruption), each as soon as the budget's
watch says it may go (``BudgetWatch``): at once if it already does, else at its next change;
after a success, only once the budget's status has changed since. A 429 on the way (the
status moved under us) waits for the next change. What a budget still refuses at
``hold_until`` is reported as blocked by it. So a budget that recovers as replacements turn
Ready lets its pods go within the cycle, one at a time, as the API server would admit them,
and in their turn, as upstream's one-by-one evictions meet them: not at the end, when their
node may have been drained by everything else and the replacement would go straight back.

A held eviction whose reason is its node being above target (``PlannedEviction.while_over``,
LowNodeUtilization's) is checked when its budget releases it: if the node, less what this run
has evicted from it (or found gone) so far, is no longer above its target, it is dropped,
logged at info and counted as ``node no longer above target``, and the next one may go at
once. Sent anyway, its replacement would be free to land straight back on the node.

Evictions an implicit budget holds (a workload without a PDB, ``core.rules.rollouts``) wait
the same way, on their workload's Ready pods (``rolloutwatch``): every eviction of such a
workload that succeeds is counted at once, since no API server keeps that budget. Each one
held and each one released is logged at info with its workload, so how many of a workload's
pods were gone and not yet replaced at any moment can be read from the log.

Events never slow evictions: a success posts a Normal Event ``Descheduled`` through the
``EventBroadcaster``, which queues it and spends its own tokens.

Concurrency: everything runs on the event loop; the blocking calls run on the adapter's
thread pool (``AsyncKube``), which is larger than the default pool size.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from agent.clock import sleep_or_set
from agent.descheduler.live.budgetwatch import BudgetWatch
from agent.descheduler.live.metrics import (
    RESULT_BLOCKED_BY_IMPLICIT_BUDGET,
    RESULT_BLOCKED_BY_PDB,
    RESULT_ERROR,
    RESULT_NODE_BELOW_TARGET,
    RESULT_NOT_FOUND,
    RESULT_SUCCESS,
)
from agent.descheduler.plan.shape import PlannedEviction, is_implicit_key
from agent.kube.backoff import Backoff, retry_async
from agent.kube.client import AsyncKube
from agent.kube.errors import KubeError, NotFound, TooManyRequests, Unavailable
from agent.kube.events import EventBroadcaster, ObjectRef
from agent.kube.ratelimit import TokenBucket

DESCHEDULED = "Descheduled"
EVICTION_FAILED = "EvictionFailed"

_log = structlog.get_logger(subsystem="descheduler.evictions")
Logger = structlog.typing.FilteringBoundLogger


@dataclass(frozen=True)
class EvictionResult:
    eviction: PlannedEviction
    result: str
    """``success``, ``error``, or why the pod was not evicted (metric label values)."""
    error: str = ""

    @property
    def evicted(self) -> bool:
        return self.result == RESULT_SUCCESS

    @property
    def gone(self) -> bool:
        """The pod is off its node: evicted, or not found."""
        return self.result in (RESULT_SUCCESS, RESULT_NOT_FOUND)


ResultListener = Callable[[EvictionResult], None]


def _ignore(_result: EvictionResult) -> None:
    return None


class _Stopped(Exception):
    """No longer allowed to evict (leadership lost): the rest is dropped."""


class _Gate:
    """Opens once every allowed eviction under one budget was answered."""

    def __init__(self) -> None:
        self.pending = 0
        self.event = asyncio.Event()

    def check(self) -> None:
        if self.pending <= 0:
            self.event.set()

    def done(self) -> None:
        self.pending -= 1
        self.check()

    def open(self) -> None:
        self.event.set()


class LiveEvictor:
    def __init__(
        self,
        kube: AsyncKube,
        events: EventBroadcaster,
        *,
        limiter: TokenBucket,
        concurrency: int,
        grace_period_seconds: int | None = None,
        retry_backoff: Backoff = Backoff(initial=0.2, cap=5.0),
        retry_attempts: int = 3,
        on_result: ResultListener = _ignore,
        may_continue: Callable[[], bool] | None = None,
        failure_events: bool = False,
    ) -> None:
        self.kube = kube
        self.events = events
        self.limiter = limiter
        self.concurrency = max(1, concurrency)
        self.grace_period_seconds = grace_period_seconds
        self.retry_backoff = retry_backoff
        self.retry_attempts = retry_attempts
        self.on_result = on_result
        self.may_continue = may_continue
        """Asked before each eviction is sent (leadership); ``False`` stops the run."""
        self.failure_events = failure_events
        """The policy's ``evictionFailureEventNotification``: a Warning ``EvictionFailed``
        Event on each pod whose eviction the API server refused or that failed."""

    async def evict_all(
        self,
        evictions: Sequence[PlannedEviction],
        *,
        held: Sequence[PlannedEviction] = (),
        refused: Sequence[PlannedEviction] = (),
        budgets: BudgetWatch | None = None,
        hold_until: float = 0.0,
    ) -> list[EvictionResult]:
        """Send ``evictions`` at once, and ``held`` as their budgets allow until ``hold_until``
        (monotonic; without ``budgets`` they are reported blocked at once); ``refused`` are
        reported blocked and never sent. One result per eviction: the sent ones in plan
        order, then the held ones, then the refused ones."""
        # Bound once per run, not once per line: the module's lazy proxy re-binds (a new
        # logger from the factory) at every call, as configuration is not cached (tests'
        # capture_logs needs that); a run's lines go to the configuration of its start.
        log = _log.bind()
        gone: dict[str, set[str]] = {}  # node -> its pods this run evicted or found gone
        by_budget: dict[str, list[PlannedEviction]] = {}
        for eviction in held:
            by_budget.setdefault(eviction.hold_key, []).append(eviction)
        # A budget's held evictions wait until its allowed ones (earlier in the plan) were
        # answered: they must not race them for the same disruption.
        gates = {key: _Gate() for key in by_budget}
        for eviction in evictions:
            gate = gates.get(eviction.budget)
            if gate is not None:
                gate.pending += 1
        for gate in gates.values():
            gate.check()
        holding = [
            asyncio.create_task(
                self._hold(
                    key,
                    pending=pending,
                    budgets=budgets,
                    hold_until=hold_until,
                    log=log,
                    gate=gates[key],
                    gone=gone,
                ),
                name=f"hold-{key}",
            )
            for key, pending in by_budget.items()
        ]
        try:
            sent = await self._pool(evictions, log, gone, gates, budgets)
            held_results = [r for results in await asyncio.gather(*holding) for r in results]
        except BaseException:
            for task in holding:
                task.cancel()
            raise
        refused_results = []
        for eviction in refused:
            result = EvictionResult(
                eviction,
                RESULT_BLOCKED_BY_PDB,
                f"{eviction.blocked_by_pdb} refused it when planned; the next cycle plans again",
            )
            self._report(log, result)
            refused_results.append(result)
        return sent + held_results + refused_results

    async def _pool(
        self,
        evictions: Sequence[PlannedEviction],
        log: Logger,
        gone: dict[str, set[str]],
        gates: Mapping[str, _Gate] | None = None,
        budgets: BudgetWatch | None = None,
    ) -> list[EvictionResult]:
        slots = asyncio.Semaphore(self.concurrency)
        tasks: list[asyncio.Task[EvictionResult]] = []
        gates = gates or {}

        async def run(eviction: PlannedEviction) -> EvictionResult:
            try:
                result = await self._evict_one(eviction, log, gone)
                if result.evicted and budgets is not None:
                    budgets.evicted(eviction)  # before the gate opens for its held ones
                return result
            finally:
                slots.release()
                gate = gates.get(eviction.budget)
                if gate is not None:
                    gate.done()

        try:
            for eviction in evictions:
                # Admission is sequential, so starts keep the plan's order; a slot is
                # taken before the token so a throttled pool does not hoard tokens.
                await slots.acquire()
                try:
                    await self._admit()
                except _Stopped:
                    slots.release()
                    _log.warning("no longer allowed to evict; the rest of the plan is dropped")
                    for gate in gates.values():
                        gate.open()  # nothing more comes: the held ones see leadership lost too
                    break
                tasks.append(asyncio.create_task(run(eviction), name=f"evict-{eviction.pod}"))
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            raise

    async def _admit(self) -> None:
        """Take a token; then ask (last: the wait may have been long) whether we may evict."""
        await self.limiter.acquire()
        if self.may_continue is not None and not self.may_continue():
            raise _Stopped

    async def _hold(
        self,
        key: str,
        *,
        pending: list[PlannedEviction],
        budgets: BudgetWatch | None,
        hold_until: float,
        log: Logger,
        gate: _Gate,
        gone: dict[str, set[str]],
    ) -> list[EvictionResult]:
        """One budget's held evictions, in plan order, each when the budget allows it and,
        for one that goes to take its node below target, while the node still needs it."""
        results: list[EvictionResult] = []
        implicit = is_implicit_key(key)
        if implicit:
            for eviction in pending:
                log.info("eviction held by an implicit budget", owner=key, pod=eviction.pod)
        if budgets is not None and hold_until <= budgets.clock.monotonic():
            budgets = None  # no hold at all: report them blocked, as the plan says
        if budgets is not None:
            await sleep_or_set(budgets.clock, hold_until - budgets.clock.monotonic(), gate.event)
        while pending and budgets is not None:
            seen = budgets.version(key)
            if budgets.allows(key):
                if self._unneeded(pending[0], gone, log):
                    results.append(
                        EvictionResult(
                            pending.pop(0),
                            RESULT_NODE_BELOW_TARGET,
                            "its node is no longer above its target; the next cycle looks again",
                        )
                    )
                    self.on_result(results[-1])
                    continue  # not sent: the budget is untouched, the next one may go
                try:
                    await self._admit()
                except _Stopped:
                    log.warning("no longer allowed to evict; held evictions dropped", budget=key)
                    return results
                if implicit and budgets.rollouts is not None:
                    log.info(
                        "implicit budget releases a held eviction",
                        owner=key,
                        pod=pending[0].pod,
                        **budgets.rollouts.facts(key),
                    )
                result = await self._evict_one(pending[0], log, gone, report_blocked=False)
                if result.result != RESULT_BLOCKED_BY_PDB:
                    results.append(result)
                    done = pending.pop(0)
                    if not result.evicted:
                        continue  # gone or failed: the next one may go at once
                    budgets.evicted(done)
                # Sent (or refused: the status moved under us): the next waits for the
                # budget's status to show it.
            if not await budgets.wait_changed(key, seen, hold_until):
                break
        return results + self._still_held(key, pending, log)

    def _still_held(
        self, key: str, pending: Sequence[PlannedEviction], log: Logger
    ) -> list[EvictionResult]:
        """What budget ``key`` still refused when the hold ended, reported blocked."""
        blocked = (
            RESULT_BLOCKED_BY_IMPLICIT_BUDGET if is_implicit_key(key) else RESULT_BLOCKED_BY_PDB
        )
        results = []
        for eviction in pending:
            result = EvictionResult(
                eviction, blocked, f"{key} still refused it when the cycle ended"
            )
            self._report(log, result)
            results.append(result)
        return results

    @staticmethod
    def _unneeded(eviction: PlannedEviction, gone: Mapping[str, set[str]], log: Logger) -> bool:
        """Whether a released eviction's node is no longer above target (logged so)."""
        target = eviction.while_over
        if target is None or target.over(gone.get(eviction.node, ())):
            return False
        log.info(
            "held eviction dropped: its node is no longer above its target",
            pod=eviction.pod,
            node=eviction.node,
            plugin=eviction.plugin,
            profile=eviction.profile,
        )
        return True

    async def _evict_one(
        self,
        eviction: PlannedEviction,
        log: Logger,
        gone: dict[str, set[str]],
        *,
        report_blocked: bool = True,
    ) -> EvictionResult:
        """Send one Eviction (its token already taken); report the result unless it is a
        budget's 429 and ``report_blocked`` is off (a held eviction waits and tries again).
        A pod evicted or not found is added to ``gone``, under its node."""

        async def send() -> None:
            await self.kube.evict(
                eviction.name, eviction.namespace, grace_period_seconds=self.grace_period_seconds
            )

        try:
            # Only transport failures are retried here; a 429 is an answer (the budget
            # said no), so the run goes on without this pod, as upstream does.
            await retry_async(
                send,
                backoff=self.retry_backoff,
                attempts=self.retry_attempts,
                retry_on=(Unavailable,),
            )
        except TooManyRequests as error:
            why = RESULT_BLOCKED_BY_PDB if error.disruption_budget else RESULT_ERROR
            result = EvictionResult(eviction, why, str(error))
        except NotFound as error:
            result = EvictionResult(eviction, RESULT_NOT_FOUND, str(error))
        except KubeError as error:
            result = EvictionResult(eviction, RESULT_ERROR, str(error))
        else:
            result = EvictionResult(eviction, RESULT_SUCCESS)
        if result.gone:
            gone.setdefault(eviction.node, set()).add(eviction.uid)
        if report_blocked or result.result != RESULT_BLOCKED_BY_PDB:
            self._report(log, result)
        return result

    def _report(self, log: Logger, result: EvictionResult) -> None:
        """Log, count, and post the result's Event (queued: never waited for)."""
        eviction = result.eviction
        pod = ObjectRef(
            kind="Pod", name=eviction.name, namespace=eviction.namespace, uid=eviction.uid
        )
        fields = {
            "pod": eviction.pod,
            "node": eviction.node,
            "plugin": eviction.plugin,
            "profile": eviction.profile,
        }
        if eviction.budget:
            fields["budget"] = eviction.budget  # a PDB's ``ns/name``, or a workload's
        if result.evicted:
            log.info("Evicted pod", **fields, reason=eviction.reason)
            self.events.post(
                pod,
                "Normal",
                DESCHEDULED,
                f"pod evicted from {eviction.node} node by kubelet-companion descheduler "
                f"({eviction.profile}/{eviction.plugin}: {eviction.reason})",
            )
        else:
            log.warning("pod not evicted", **fields, result=result.result, error=result.error)
            if self.failure_events and result.result != RESULT_NOT_FOUND:
                # Upstream's wording; a pod that is gone has nobody left to read the Event.
                self.events.post(
                    pod,
                    "Warning",
                    EVICTION_FAILED,
                    f"pod eviction from {eviction.node} node by kubelet-companion descheduler "
                    f"failed: {result.error}",
                )
        self.on_result(result)
