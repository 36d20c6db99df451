"""Our Node's ``kubelet-companion.io/shutting-down:NoSchedule`` taint, converged in the background.

The taint keeps the scheduler from placing pods on a node that is going down (kubelet
rejects them at admission instead, after they were already bound). It is written through
``NodePatcher``, so the patch is guarded by a ``test`` on resourceVersion and only our own
taint ever changes.

The shutdown waits for the API server to store it before its first pod request, but only
briefly (``ShutdownRun``): past that the phases go on while the taint is still retried. And
a cancellation or a reboot must not give up removing it just because the API server is down
for a while. So the wanted state is handed to ``TaintKeeper.want``, and a task retries until
the Node shows that state (the task's result says whether it got there, which the run
waits for). The newest wish wins, but a newer wish never *cancels* an older one's task:
cancelling the awaiting task does not stop a PATCH already handed to the client's worker
thread, and the resourceVersion guard cannot stop it either (it was built against the
version current at the time). That late write would land after a removal that, reading the
cache, found nothing to remove. Instead the older task is told it is superseded, stops at
its next safe point (it builds no more operations and cuts its backoff short), and the
newer one starts only when it has returned, from a fresh read of the Node.

A wish without a deadline (a removal) retries for ever, with capped backoff; after
``trouble_after`` failures in a row ``on_trouble`` reports it (the controller marks the
agent degraded), and the next success clears it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from agent import DOMAIN
from agent.clock import SystemClock, sleep_or_set
from agent.kube.backoff import Backoff, RetryPolicy, retry_after_of
from agent.kube.errors import KubeError, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.patches import NodePatcher, Op, Taint, taint_ops
from agent.kubesemantics.wellknown import NO_SCHEDULE

SHUTTING_DOWN = Taint(key=f"{DOMAIN}/shutting-down", effect=NO_SCHEDULE)
TROUBLE_AFTER = 5
"""Failed attempts in a row before a taint write is reported as a problem."""
_log = structlog.get_logger(subsystem="shutdown.taint")


def add_taint(node: JsonObject) -> list[Op]:
    return taint_ops(node, ensure=SHUTTING_DOWN)


def remove_taint(node: JsonObject) -> list[Op]:
    return taint_ops(node, remove=SHUTTING_DOWN.key)


class TaintKeeper:
    def __init__(
        self,
        patcher: NodePatcher,
        cached_node: Callable[[], JsonObject | None],
        *,
        monotonic: Callable[[], float],
        backoff: Backoff = Backoff(initial=0.2, cap=5.0),
        on_trouble: Callable[[str | None], None] = lambda _problem: None,
        trouble_after: int = TROUBLE_AFTER,
    ) -> None:
        self.patcher = patcher
        self.cached_node = cached_node
        self.monotonic = monotonic
        self.policy = RetryPolicy(backoff, monotonic=monotonic)
        self.on_trouble = on_trouble
        self.trouble_after = trouble_after
        self._task: asyncio.Task[bool] | None = None
        self._superseded = asyncio.Event()
        """Set when the current wish is overtaken; each wish gets a fresh one."""
        self._troubled = False

    def want(self, present: bool, *, deadline: float | None = None) -> asyncio.Task[bool]:
        """Converge to ``present`` (until ``deadline``, a monotonic time, if given)."""
        previous = self._task
        self._superseded.set()  # the previous wish stops at its next safe point
        self._superseded = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._converge(present, deadline, previous, self._superseded),
            name=f"shutdown-taint-{present}",
        )
        return self._task

    async def _converge(
        self,
        present: bool,
        deadline: float | None,
        previous: asyncio.Task[bool] | None,
        superseded: asyncio.Event,
    ) -> bool:
        node: JsonObject | None
        if previous is None:
            node = self.cached_node()  # nothing of ours was ever written: the cache will do
        else:
            # Wait (never cancel) until the previous wish's write is off the wire, then read
            # the Node afresh: the cache may not show that write yet, and deciding from it
            # would leave its result in place. asyncio.wait does not cancel ``previous``.
            await asyncio.wait({previous})
            node = None
        what = "add shutting-down taint" if present else "remove shutting-down taint"

        def build(current: JsonObject) -> list[Op]:
            # Runs on the loop right before the PATCH is sent: once overtaken, send nothing.
            if superseded.is_set():
                return []
            return add_taint(current) if present else remove_taint(current)

        failures = 0
        while not superseded.is_set():
            try:
                await self.patcher.update(build, what=what, node=node, deadline=deadline)
            except NotFound:
                _log.warning("our Node does not exist; cannot change its taint", what=what)
                self._report(None)
                return False
            except KubeError as error:
                failures += 1
                wait = self.policy.next_wait(
                    failures, retry_after=retry_after_of(error), deadline=deadline
                )
                if wait is None:
                    _log.error("gave up on the taint at the deadline", what=what, error=str(error))
                    return False
                if failures >= self.trouble_after:
                    self._report(f"cannot {what} ({failures} attempts): {error}")
                _log.warning("node taint not written yet; retrying", what=what, error=str(error))
                node = None
                # A newer wish cuts the backoff short. Real time, as before: the injected
                # ``monotonic`` only measures the deadline.
                await sleep_or_set(SystemClock(), wait, superseded)
                continue
            if superseded.is_set():
                break  # overtaken while the write was in flight; the newer wish decides
            _log.info("node taint set" if present else "node taint removed", key=SHUTTING_DOWN.key)
            self._report(None)
            return True
        return False

    def _report(self, problem: str | None) -> None:
        if problem is not None and not self._troubled:
            _log.error("the shutting-down taint cannot be written; still retrying", problem=problem)
        if problem is not None or self._troubled:
            self.on_trouble(problem)
        self._troubled = problem is not None

    async def wait(self) -> bool:
        task = self._task
        if task is None:
            return True
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                return False
            raise

    def close(self) -> None:
        self._superseded.set()
        if self._task is not None:
            self._task.cancel()
