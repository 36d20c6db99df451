"""PodDisruptionBudgets as the live loop waits on them: each budget's status, and its changes.
Implicit budgets too (``rolloutwatch``): a key of that form (``Deployment ns/name``) is asked
of them, and a change of a workload's health wakes its waiters the same way.

A held eviction (``evictions.planner``) goes when its budget allows it again: the disruption
controller raises ``disruptionsAllowed`` once the pod that replaced the last one evicted is
Ready, and the budget cache's watch brings that within a moment. This turns those watch
events into something a coroutine can wait on: ``wait_changed(key, seen)`` returns once the
budget ``key`` changed after version ``seen`` (or was deleted), or the wait times out.

Concurrency: the cache's listener and every waiter run on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping

from agent.clock import Clock, sleep_or_set
from agent.descheduler.live.rolloutwatch import RolloutWatch
from agent.descheduler.model.cluster import DisruptionBudget, PodInfo
from agent.descheduler.plan.shape import ImplicitBudget, PlannedEviction, is_implicit_key

Lookup = Callable[[str], DisruptionBudget | None]
"""``namespace/name`` -> the cached budget, ``None`` when there is none."""


def budget_key(budget: DisruptionBudget) -> str:
    return f"{budget.namespace}/{budget.name}"


class BudgetWatch:
    """The budgets' current state and a version per budget, bumped by every change."""

    def __init__(
        self,
        lookup: Lookup,
        clock: Clock,
        pods: Callable[[], Iterable[PodInfo]] | None = None,
    ) -> None:
        """``pods``: the pod cache's pods, which implicit budgets count; without it implicit
        budgets are not followed (their held evictions go as if allowed)."""
        self.lookup = lookup
        self.clock = clock
        self._versions: dict[str, int] = {}
        self._changed = asyncio.Event()
        self.rollouts = RolloutWatch(pods, self._bump) if pods is not None else None

    def on_event(self, kind: str, budget: DisruptionBudget | None) -> None:
        """The budget cache's listener: every event bumps its budget's version; a relist
        (``SYNCED``) bumps them all, as anything may have changed meanwhile."""
        if kind == "SYNCED" or budget is None:
            for key in self._versions:
                self._versions[key] += 1
            self._wake()
        else:
            self._bump(budget_key(budget))

    def _bump(self, key: str) -> None:
        self._versions[key] = self._versions.get(key, 0) + 1
        self._wake()

    def _wake(self) -> None:
        # Wake every waiter; each checks its own budget's version and waits again if it is
        # not the one that moved (budgets change rarely: a shared event is enough).
        self._changed.set()
        self._changed = asyncio.Event()

    def track(self, implicit: Mapping[str, ImplicitBudget]) -> None:
        """Follow one cycle's implicit budgets (the plan's) while its evictions go."""
        if self.rollouts is not None:
            self.rollouts.track(implicit)

    def evicted(self, eviction: PlannedEviction) -> None:
        """``eviction`` succeeded: an implicit budget counts the pod unavailable at once (a
        PDB's status is the API server's to update)."""
        if self.rollouts is not None and is_implicit_key(eviction.budget):
            self.rollouts.evicted(eviction.budget, eviction.uid)

    def version(self, key: str) -> int:
        return self._versions.get(key, 0)

    def allows(self, key: str) -> bool:
        """Whether the budget's status would let one more pod go now (or it is gone)."""
        if is_implicit_key(key):
            return self.rollouts is None or self.rollouts.allows(key)
        budget = self.lookup(key)
        if budget is None:
            return True
        if budget.disruptions_allowed > 0:
            return True
        return (
            budget.current_healthy is not None
            and budget.desired_healthy is not None
            and budget.current_healthy > budget.desired_healthy
        )

    async def wait_changed(self, key: str, seen: int, deadline: float) -> bool:
        """Wait until budget ``key`` moved past version ``seen``; ``False`` at ``deadline``
        (monotonic)."""
        while self.version(key) <= seen:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            await sleep_or_set(self.clock, remaining, self._changed)
        return True
