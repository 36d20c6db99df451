"""Sending a plan's allowed evictions through the eviction API, in parallel, within limits.

Upstream evicts one pod at a time (about 160/s on our bench machine). Here up to
``concurrency`` Evictions are in flight at once, each first taking a token from the
client's QPS bucket. The limits (total, per node, per namespace) were checked when the
plan was made, so concurrency can never exceed them; this module only decides how fast.

Order: evictions *start* in the plan's order (the pool admits them one by one, in order);
they may finish in any order. Results, as upstream: 429 (a PodDisruptionBudget, or
throttling that outlasted our retries) and 404 (the pod is gone) count as not evicted and
the run goes on; 5xx and timeouts are retried with backoff a few times. A success posts a
Normal Event ``Descheduled`` on the pod, in the same worker call as its Eviction (a thread
hop per request was the largest share of client CPU left per eviction, and the client CPU
is what bounds the pool's gain under the GIL).

Concurrency: everything runs on the event loop; the blocking calls run on the adapter's
thread pool (``AsyncKube``), which is larger than the default pool size.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from agent.descheduler.metrics import (
    RESULT_BLOCKED_BY_PDB,
    RESULT_ERROR,
    RESULT_NOT_FOUND,
    RESULT_SUCCESS,
)
from agent.descheduler.plan import Plan, PlannedEviction
from agent.kube.backoff import Backoff, retry_async
from agent.kube.client import AsyncKube
from agent.kube.errors import KubeError, NotFound, TooManyRequests, Unavailable
from agent.kube.events import EventRecorder, ObjectRef
from agent.kube.ratelimit import TokenBucket

DEFAULT_CONCURRENCY = 8
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


ResultListener = Callable[[EvictionResult], None]


def _ignore(_result: EvictionResult) -> None:
    return None


class LiveEvictor:
    def __init__(
        self,
        kube: AsyncKube,
        events: EventRecorder,
        *,
        limiter: TokenBucket,
        concurrency: int = DEFAULT_CONCURRENCY,
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
        """Asked before each eviction is admitted (leadership); ``False`` stops the run."""
        self.failure_events = failure_events
        """The policy's ``evictionFailureEventNotification``: a Warning ``EvictionFailed``
        Event on each pod whose eviction the API server refused or that failed."""

    async def execute(self, plan: Plan) -> list[EvictionResult]:
        """Evict the plan's allowed pods; return one result per eviction, in plan order."""
        return await self.evict_all(plan.allowed)

    async def evict_all(self, evictions: Sequence[PlannedEviction]) -> list[EvictionResult]:
        slots = asyncio.Semaphore(self.concurrency)
        tasks: list[asyncio.Task[EvictionResult]] = []
        # Bound once per run, not once per line: the module's lazy proxy re-binds (a new
        # logger from the factory) at every call, as configuration is not cached (tests'
        # capture_logs needs that); a run's lines go to the configuration of its start.
        log = _log.bind()

        async def run(eviction: PlannedEviction) -> EvictionResult:
            try:
                return await self._evict_one(eviction, log)
            finally:
                slots.release()

        try:
            for eviction in evictions:
                # Admission is sequential, so starts keep the plan's order; a slot is
                # taken before the token so a throttled pool does not hoard tokens.
                await slots.acquire()
                await self.limiter.acquire()
                # Asked last, right before sending: the waits above may have been long.
                if self.may_continue is not None and not self.may_continue():
                    slots.release()
                    _log.warning("no longer allowed to evict; the rest of the plan is dropped")
                    break
                tasks.append(asyncio.create_task(run(eviction), name=f"evict-{eviction.pod}"))
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            raise

    async def _evict_one(self, eviction: PlannedEviction, log: Logger) -> EvictionResult:
        pod = ObjectRef(
            kind="Pod", name=eviction.name, namespace=eviction.namespace, uid=eviction.uid
        )

        def post_descheduled() -> None:
            # Runs on the worker thread right after the Eviction was accepted: one hop to
            # the pool per eviction, not two. ``emit_now`` logs and swallows its own
            # KubeError, so a failed Event never fails (or retries) the eviction.
            self.events.emit_now(
                pod,
                "Normal",
                DESCHEDULED,
                f"pod evicted from {eviction.node} node by kubelet-companion descheduler "
                f"({eviction.profile}/{eviction.plugin}: {eviction.reason})",
            )

        async def send() -> None:
            await self.kube.evict(
                eviction.name,
                eviction.namespace,
                grace_period_seconds=self.grace_period_seconds,
                then=post_descheduled,
            )

        # The Event's token is taken here, before the Eviction is sent (the worker thread
        # cannot wait on the loop's bucket): a refused eviction leaves one token unused,
        # which errs on the side of fewer requests than the QPS allows, never more.
        await self.limiter.acquire()
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
        self._log(log, result)
        self.on_result(result)
        if not result.evicted and self.failure_events and result.result != RESULT_NOT_FOUND:
            # Upstream's wording; a pod that is gone has nobody left to read the Event.
            await self.limiter.acquire()
            await self.events.emit(
                pod,
                "Warning",
                EVICTION_FAILED,
                f"pod eviction from {eviction.node} node by kubelet-companion descheduler "
                f"failed: {result.error}",
            )
        return result

    @staticmethod
    def _log(log: Logger, result: EvictionResult) -> None:
        eviction = result.eviction
        fields = {
            "pod": eviction.pod,
            "node": eviction.node,
            "plugin": eviction.plugin,
            "profile": eviction.profile,
        }
        if result.evicted:
            log.info("Evicted pod", **fields, reason=eviction.reason)
        else:
            log.warning("pod not evicted", **fields, result=result.result, error=result.error)
