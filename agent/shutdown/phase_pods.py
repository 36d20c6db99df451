"""The pods of one running phase: all told to stop at once, followed until gone or the deadline.

Every pod's termination runs concurrently (a slow API answer for one pod never holds up
another's), and the phase ends as soon as NodeState shows them all gone, or at its
absolute deadline. A pod counts as gone when NodeState no longer has it under the same
uid, or when the API said so (404, or the delete's uid precondition failed).

In evict mode a PodDisruptionBudget is honoured until the deadline; an eviction refused
for good (403, 404, any answer but a retryable one) is followed by a delete at once. At
the deadline every pod still here with no accepted delete or eviction (a PDB still
protects it, its eviction or its delete was never answered, or refused) gets a delete:
whatever made the eviction fail, the pod does not survive the shutdown. That delete is
decided when the phase ends, by whoever ends it (its deadline, or the budget's end), so
no timer racing the end of the run can skip it. Delete mode sends no such second round:
its deletes were retried up to the deadline already, and more of them, sent while an API
server hangs, would only take the pool threads the next phase needs.

Concurrency: all on the event loop. The termination tasks are spawned through the run
(which cancels whatever is left when it ends); ``_progress`` wakes the waiter when one of
them learns something NodeState does not show yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import StrEnum

import structlog

from agent.clock import first_done
from agent.kube.nodestate import NodeState
from agent.shutdown.phases import PodTarget
from agent.shutdown.terminate import Outcome, PodApi, Spawn, evict_pod, mark_then_delete

_log = structlog.get_logger(subsystem="shutdown.run")


class PodResult(StrEnum):
    """How a pod of a phase ended: the ``result`` label of
    ``kubelet_companion_shutdown_pods_terminated``."""

    GONE = "gone"
    """It left the API before the phase deadline."""
    BLOCKED = "blocked"
    """A PodDisruptionBudget held its eviction to the deadline."""
    TIMED_OUT = "timed-out"
    """A delete or eviction was accepted, and it was still there at the deadline."""
    FAILED = "failed"
    """No delete or eviction request got through."""


class PhasePods:
    def __init__(
        self,
        targets: tuple[PodTarget, ...],
        *,
        node_state: NodeState,
        kube: PodApi,
        evict: bool,
        monotonic: Callable[[], float],
        now: Callable[[], float],
    ) -> None:
        self.targets = targets
        self.node_state = node_state
        self.kube = kube
        self.evict = evict
        self.monotonic = monotonic
        self.now = now
        self.outcomes: dict[str, Outcome] = {}
        self._confirmed_gone: set[str] = set()
        self._progress = asyncio.Event()

    def start(self, deadline: float, spawn: Spawn) -> None:
        """Terminate every pod concurrently, each request bounded by ``deadline``."""
        for target in self.targets:
            spawn(self._terminate(target, deadline, spawn))

    def add(self, targets: tuple[PodTarget, ...], deadline: float, spawn: Spawn) -> None:
        """More pods for this phase (they reached NodeState late), told to stop at once."""
        self.targets += targets
        for target in targets:
            spawn(self._terminate(target, deadline, spawn))

    def present(self, target: PodTarget) -> bool:
        if target.key in self._confirmed_gone:
            return False
        pod = self.node_state.pods.get(target.key)
        return pod is not None and str((pod.get("metadata") or {}).get("uid") or "") == target.uid

    async def wait_gone(self, deadline: float, on_wake: Callable[[], None] = lambda: None) -> bool:
        """Until every pod is gone (True) or the deadline comes (False). ``on_wake`` runs
        first and after every change NodeState shows (it may ``add`` pods) before the pods
        are checked again."""
        state = self.node_state
        while True:
            on_wake()
            if not any(self.present(target) for target in self.targets):
                return True
            remaining = deadline - self.monotonic()
            if remaining <= 0:
                return False
            self._progress.clear()
            # Both waits are coroutines, so the race's own tasks, cancelled whichever wins;
            # the timer is NodeState's (real time, bounded by ``remaining``).
            await first_done(
                state.wait_changed(state.version, timeout=remaining), self._progress.wait()
            )

    def results(self) -> list[tuple[PodTarget, PodResult]]:
        """Each pod's result for the metric."""
        return [(target, self._result(target)) for target in self.targets]

    def _result(self, target: PodTarget) -> PodResult:
        outcome = self.outcomes.get(target.key)
        if not self.present(target):
            return PodResult.GONE
        if outcome is Outcome.BLOCKED:
            return PodResult.BLOCKED
        if outcome is Outcome.REQUESTED:
            return PodResult.TIMED_OUT
        return PodResult.FAILED

    def undeleted(self) -> list[PodTarget]:
        """Evict mode, at the deadline: pods still here that no accepted request is ending."""
        if not self.evict:
            return []
        return [
            target
            for target in self.targets
            if self.outcomes.get(target.key) not in (Outcome.REQUESTED, Outcome.GONE)
            and self.present(target)
        ]

    async def _terminate(self, target: PodTarget, deadline: float, spawn: Spawn) -> None:
        kube, monotonic = self.kube, self.monotonic
        outcome = None
        if self.evict:
            outcome = await evict_pod(
                kube,
                target,
                deadline=deadline,
                monotonic=monotonic,
                still_present=lambda: self.present(target),
            )
            # BLOCKED: the PDB is honoured until the deadline; see ``undeleted``.
        if outcome is None or outcome is Outcome.FAILED:  # delete mode, or evictions refused
            outcome = await mark_then_delete(
                kube, target, deadline=deadline, monotonic=monotonic, now=self.now, spawn=spawn
            )
        self.outcomes[target.key] = outcome
        if outcome is Outcome.GONE:
            self._confirmed_gone.add(target.key)
        self._progress.set()
        _log.debug("pod termination requested", pod=target.key, outcome=outcome.value)
