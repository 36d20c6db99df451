"""Implicit budgets as the live loop waits on them: each workload's Ready pods, from the pod
cache.

A held eviction of an implicit budget (``core.rules.rollouts``) goes once its workload has a
disruption to spare again, ``max_unavailable - (desired - healthy) > 0``, healthy being its
Running, Ready pods that are not being deleted. The figures (``desired``, ``max_unavailable``,
which controllers' pods count) are the plan's; health is the pod cache's, so a replacement
counts as soon as the watch shows it Ready, and every change of a workload's health wakes
its held evictions (``BudgetWatch``), as a PDB's status change does.

No API server keeps this budget: what this process evicts counts at once (``evicted``), since
the pod cache shows the deletion only a moment later, and a pod it evicted never counts as
healthy again. Those are forgotten when the pod is gone.

Concurrency: the pod cache's listener and every reader run on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.plan.shape import ImplicitBudget
from agent.kubesemantics.wellknown import RUNNING

Changed = Callable[[str], None]
"""Told the key of a budget whose health changed."""


def _healthy(pod: PodInfo) -> bool:
    return pod.phase == RUNNING and pod.ready and not pod.deleting


def _controller_uid(pod: PodInfo) -> str:
    for owner in pod.owners:
        if owner.controller:
            return owner.uid
    return ""


class RolloutWatch:
    """The Ready pods of the workloads one cycle's implicit budgets cover."""

    def __init__(self, pods: Callable[[], Iterable[PodInfo]], changed: Changed) -> None:
        self._pods = pods
        self._changed = changed
        self._budgets: dict[str, ImplicitBudget] = {}
        self._key_of: dict[str, str] = {}
        """Controller UID -> the key of the budget its pods count for."""
        self._healthy: dict[str, set[str]] = {}
        """Key -> UIDs of its healthy pods."""
        self._evicted: set[str] = set()
        """UIDs of pods this process evicted, until the cache shows them gone."""

    def track(self, budgets: Mapping[str, ImplicitBudget]) -> None:
        """Follow ``budgets`` (one cycle's) from now on, counted afresh from the pod cache."""
        self._budgets = dict(budgets)
        self._key_of = {uid: key for key, b in budgets.items() for uid in b.members}
        self._recount()

    def _recount(self) -> None:
        self._healthy = {key: set() for key in self._budgets}
        if not self._key_of:
            return
        for pod in self._pods():
            key = self._key_of.get(_controller_uid(pod))
            if key is not None and _healthy(pod) and pod.uid not in self._evicted:
                self._healthy[key].add(pod.uid)

    def on_pod_event(self, kind: str, pod: PodInfo | None) -> None:
        """The pod cache's listener."""
        if kind == "SYNCED" or pod is None:
            self._recount()  # a relist: anything may have changed
            for key in self._budgets:
                self._changed(key)
            return
        if kind == "DELETED":
            self._evicted.discard(pod.uid)
        found = self._key_of.get(_controller_uid(pod))
        if found is None:
            return
        key = found
        members = self._healthy[key]
        was = pod.uid in members
        now = kind != "DELETED" and _healthy(pod) and pod.uid not in self._evicted
        if now:
            members.add(pod.uid)
        else:
            members.discard(pod.uid)
        if now != was:
            self._changed(key)

    def evicted(self, key: str, uid: str) -> None:
        """This process evicted pod ``uid`` of budget ``key``: it is unavailable from now."""
        self._evicted.add(uid)
        members = self._healthy.get(key)
        if members is not None and uid in members:
            members.discard(uid)
            self._changed(key)

    def allows(self, key: str) -> bool:
        """Whether budget ``key`` lets one more of its pods go now (a budget not followed:
        yes, as for a PDB that is gone)."""
        budget = self._budgets.get(key)
        if budget is None:
            return True
        return budget.allows(len(self._healthy[key])) > 0

    def facts(self, key: str) -> dict[str, int]:
        """What a log line says of the budget now."""
        budget = self._budgets.get(key)
        if budget is None:
            return {}
        return {
            "healthy": len(self._healthy[key]),
            "desired": budget.desired,
            "max_unavailable": budget.max_unavailable,
        }
