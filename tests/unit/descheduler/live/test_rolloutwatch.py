"""The live loop's view of implicit budgets: a workload's healthy pods from pod events, what
this process evicted unavailable at once and never healthy again, a change announced only
when health moved."""

from __future__ import annotations

from typing import Any

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.live.rolloutwatch import RolloutWatch
from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.plan.shape import ImplicitBudget
from tests.harness.deschedulerstate import pod
from tests.harness.kubeobjects import owner_ref

KEY = "Deployment default/web"
BUDGET = ImplicitBudget(
    key=KEY, desired=4, max_unavailable=1, members=frozenset({"uid-ReplicaSet-web-1"})
)


def _pod(name: str, **fields: Any) -> PodInfo:
    return project_pod(pod(name, "n1", owner=owner_ref("ReplicaSet", "web-1"), **fields))


def _watch(pods: list[PodInfo]) -> tuple[RolloutWatch, list[str]]:
    changes: list[str] = []
    watch = RolloutWatch(lambda: pods, changes.append)
    watch.track({KEY: BUDGET})
    return watch, changes


def test_health_comes_from_the_pod_cache_and_its_events() -> None:
    """4 Ready pods of 4 allow one disruption; one going unready allows none, and its
    replacement turning Ready allows one again; each move is announced, a repeat is not."""
    pods = [_pod(f"web-{i}") for i in range(4)]
    watch, changes = _watch(pods)
    assert watch.allows(KEY)
    watch.on_pod_event("MODIFIED", _pod("web-0", ready=False))
    assert not watch.allows(KEY)
    watch.on_pod_event("ADDED", _pod("web-r", phase="Pending", ready=False))
    watch.on_pod_event("MODIFIED", _pod("web-r"))
    assert watch.allows(KEY)
    watch.on_pod_event("MODIFIED", _pod("web-r"))
    assert changes == [KEY, KEY]
    assert watch.facts(KEY) == {"healthy": 4, "desired": 4, "max_unavailable": 1}


def test_what_this_process_evicted_is_gone_at_once_and_stays_gone() -> None:
    """An eviction it made counts before the cache shows it; an older event that still shows
    the pod Ready does not bring it back; once the pod is deleted it is forgotten."""
    pods = [_pod(f"web-{i}") for i in range(4)]
    watch, changes = _watch(pods)
    watch.evicted(KEY, "uid-default-web-0")
    assert not watch.allows(KEY)
    watch.on_pod_event("MODIFIED", pods[0])  # a stale event from before the eviction
    assert not watch.allows(KEY)
    watch.on_pod_event("DELETED", pods[0])
    assert changes == [KEY]
    # Forgotten once deleted (the memory stays bounded): this test's cache, which still
    # lists the pod, counts it again at the next cycle.
    watch.track({KEY: BUDGET})
    assert watch.facts(KEY)["healthy"] == 4


def test_other_pods_and_budgets_not_followed() -> None:
    """A pod of another controller changes nothing; a budget not followed allows, as a PDB
    that is gone does."""
    watch, changes = _watch([_pod(f"web-{i}") for i in range(3)])
    other = project_pod(pod("api-0", "n1", owner=owner_ref("ReplicaSet", "api-1")))
    watch.on_pod_event("DELETED", other)
    assert changes == []
    assert not watch.allows(KEY)  # 3 of 4 healthy: none to spare
    assert watch.allows("Deployment default/other")
