"""The implicit rollout budget measure: its arithmetic over synthetic event sequences, and the
tracker turning watch events into those events."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from scripts.benchmarks.livecluster import measures, rolloutbudget
from scripts.benchmarks.livecluster.rolloutbudget import EVICTED, READY, RolloutEvent
from scripts.benchmarks.livecluster.tracker import PodTracker


def _events(*steps: tuple[float, str, str]) -> list[RolloutEvent]:
    return [RolloutEvent(t, kind, deployment, f"{deployment}-{i}")  # type: ignore[arg-type]
            for i, (t, kind, deployment) in enumerate(steps)]  # fmt: skip


def test_the_peak_is_the_most_evicted_and_not_yet_replaced_at_once() -> None:
    """Evictions raise the count, Ready replacements lower it; the peak is its highest
    point over replicas, and when it was first reached (a later, lower point, or a later
    return to the same height, does not replace it)."""
    found = rolloutbudget.peaks(
        _events(
            (1.0, EVICTED, "ns/a"),
            (1.1, EVICTED, "ns/a"),
            (2.0, READY, "ns/a"),
            (2.5, EVICTED, "ns/a"),
            (2.6, EVICTED, "ns/a"),
            (3.0, READY, "ns/a"),
            (3.1, READY, "ns/a"),
            (3.2, READY, "ns/a"),
            (4.0, EVICTED, "ns/a"),
            (5.0, EVICTED, "ns/a"),
            (5.1, EVICTED, "ns/a"),
        ),
        {"ns/a": 10},
    )
    peak = found["ns/a"]
    assert (peak.outstanding, peak.t, peak.ratio) == (3, 2.6, 0.3)
    assert not peak.within


def test_a_ready_pod_with_nothing_outstanding_banks_nothing() -> None:
    """A pod turning Ready before any eviction (a late start, a scale-up) does not offset a
    later eviction: the count never goes below zero."""
    found = rolloutbudget.peaks(
        _events(
            (0.5, READY, "ns/a"),
            (0.6, READY, "ns/a"),
            (1.0, EVICTED, "ns/a"),
            (1.1, EVICTED, "ns/a"),
        ),
        {"ns/a": 8},
    )
    assert found["ns/a"].outstanding == 2
    assert found["ns/a"].ratio == 0.25
    assert found["ns/a"].within


@pytest.mark.parametrize(
    ("evicted", "within"),
    [pytest.param(5, True, id="25-percent-of-20-is-within"), pytest.param(6, False, id="30")],
)
def test_the_implicit_budget_is_a_quarter_of_the_replicas(evicted: int, within: bool) -> None:
    """At most 25 % (a Deployment's default maxUnavailable) evicted and not replaced."""
    found = rolloutbudget.peaks(_events(*[(float(i), EVICTED, "ns/a") for i in range(evicted)]),
                                {"ns/a": 20})  # fmt: skip
    assert found["ns/a"].within is within


def test_deployments_with_a_budget_and_ties_in_time() -> None:
    """Only the Deployments given (those without a PDB) are measured; events of one instant
    are taken in the watch's order (a Ready before an eviction at the same time does not
    lower the eviction's count); the worst Deployment is the highest ratio."""
    found = rolloutbudget.peaks(
        _events(
            (1.0, EVICTED, "ns/guarded"),
            (1.0, EVICTED, "ns/guarded"),
            (2.0, READY, "ns/b"),
            (2.0, EVICTED, "ns/b"),
            (3.0, EVICTED, "ns/c"),
        ),
        {"ns/b": 4, "ns/c": 10},
    )
    assert set(found) == {"ns/b", "ns/c"}
    assert found["ns/b"].outstanding == 1
    worst = rolloutbudget.worst_of(found)
    assert worst is not None
    assert (worst.deployment, worst.ratio) == ("ns/b", 0.25)
    assert rolloutbudget.worst_of({}) is None
    assert rolloutbudget.peaks([], {"ns/a": 5})["ns/a"].t is None


# -- from the watch ------------------------------------------------------------------------------


def _pod(uid: str, version: str, *, ready: bool = False, evicted: bool = False,
         deleting: bool = False) -> dict[str, Any]:  # fmt: skip
    conditions = []
    if ready:
        conditions.append({"type": "Ready", "status": "True"})
    if evicted:
        conditions.append(
            {"type": "DisruptionTarget", "status": "True", "reason": measures.EVICTION_REASON}
        )
    meta: dict[str, Any] = {
        "uid": uid,
        "name": f"web-7d4b9-{uid}",
        "namespace": "ns",
        "resourceVersion": version,
        "labels": {"pod-template-hash": "7d4b9"},
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d4b9", "controller": True}],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T10:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "n1"}, "status": {"conditions": conditions}}


class _Source:
    def __init__(self, items: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        self.items = items
        self.events = events
        self.tracker: PodTracker | None = None

    def list_all(self, path: str) -> tuple[list[dict[str, Any]], str]:
        assert path == "/api/v1/pods"
        return self.items, "1"

    def watch(
        self, path: str, resource_version: str, seconds: int = 240
    ) -> Iterator[dict[str, Any]]:
        assert (path, resource_version, seconds) == ("/api/v1/pods", "1", 120)
        assert self.tracker is not None
        self.tracker.record()  # recording starts after the first list, as in a run
        yield from self.events
        self.tracker.stop.set()


def test_the_tracker_turns_watch_events_into_evictions_and_ready_replacements() -> None:
    """A pod the API server marked for the eviction API is an eviction (once, however many
    events show it); a new pod's first Ready is a replacement; a pod deleted without the
    condition is counted apart; pods Ready before recording started are not events."""
    source = _Source(
        [_pod("a", "1", ready=True), _pod("b", "1", ready=True)],
        [
            {"type": "MODIFIED", "object": _pod("a", "2", ready=True, evicted=True)},
            {"type": "MODIFIED", "object": _pod("a", "3", evicted=True, deleting=True)},
            {"type": "DELETED", "object": _pod("a", "4", evicted=True, deleting=True)},
            {"type": "ADDED", "object": _pod("c", "5")},
            {"type": "MODIFIED", "object": _pod("c", "6", ready=True)},
            {"type": "MODIFIED", "object": _pod("c", "7", ready=True)},
            {"type": "DELETED", "object": _pod("b", "8", ready=True, deleting=True)},
        ],
    )
    tracker = PodTracker(source)  # type: ignore[arg-type]
    source.tracker = tracker
    thread = threading.Thread(target=tracker.run)
    thread.start()
    thread.join(10)
    events, plain = tracker.rollout_events()
    assert [(e.kind, e.deployment, e.pod) for e in events] == [
        (EVICTED, "ns/web", "ns/web-7d4b9-a"),
        (READY, "ns/web", "ns/web-7d4b9-c"),
    ]
    assert plain == 1


def test_deployment_of_a_pod() -> None:
    """A ReplicaSet's pod belongs to the Deployment named by the ReplicaSet less the pod's
    template hash; a pod of another controller, or of none, is its own group."""
    assert measures.deployment_of(_pod("a", "1")) == "ns/web"
    owner = {"kind": "Job", "name": "j", "controller": True}
    job = {"metadata": {"namespace": "ns", "name": "j-1", "ownerReferences": [owner]}}
    assert measures.deployment_of(job) == "ns/j"
    assert measures.deployment_of({"metadata": {"namespace": "ns", "name": "bare"}}) == "ns/bare"
