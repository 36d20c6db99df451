"""The phase plan: kubelet's grouping rule, our skip rules, grace periods and deadlines."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.shutdown import (
    PriorityBucket,
    budget_seconds,
    priority_buckets,
)
from agent.kubesemantics.wellknown import SYSTEM_CRITICAL_PRIORITY
from agent.shutdown.phases import (
    MIN_API_GRACE_SECONDS,
    bucket_index,
    grace_seconds,
    plan_phases,
    skip_reason,
)
from tests.harness import kubeobjects
from tests.harness.kubeobjects import owner_ref

BUCKETS = (
    PriorityBucket(priority=0, shutdown_grace_period_seconds=10),
    PriorityBucket(priority=1000, shutdown_grace_period_seconds=20),
    PriorityBucket(priority=100000, shutdown_grace_period_seconds=30),
)


def pod(name: str, **fields: Any) -> dict[str, Any]:
    """A Running pod on ``n1``, uid ``uid-<name>``; ``fields`` as ``kubeobjects.pod``'s."""
    return kubeobjects.pod(name, "n1", **{"uid": f"uid-{name}", "phase": "Running", **fields})


@pytest.mark.parametrize(
    ("priority", "expected"),
    [
        (-5, 0),  # below the lowest bucket: the lowest
        (0, 0),
        (999, 0),
        (1000, 1),  # exactly a bucket's priority: that bucket
        (99999, 1),
        (100000, 2),
        (SYSTEM_CRITICAL_PRIORITY, 2),  # above the highest: the highest
    ],
)
def test_bucket_index_follows_kubelets_rule(priority: int, expected: int) -> None:
    """A pod joins the highest bucket <= its priority; out of range, the nearest end."""
    assert bucket_index([0, 1000, 100000], priority) == expected


def test_bucket_index_below_a_lowest_bucket_that_is_not_zero() -> None:
    """With the lowest bucket at 500, a priority-0 pod still lands in it (not dropped)."""
    assert bucket_index([500, 2000], 0) == 0


def test_pods_are_grouped_and_phases_ordered_low_to_high() -> None:
    """Six pods of mixed priority land in three phases, ascending, nil priority counted as 0."""
    pods = [
        pod("critical", priority=SYSTEM_CRITICAL_PRIORITY),
        pod("low-a", priority=0),
        pod("mid-b", priority=5000),
        pod("no-priority"),
        pod("mid-a", priority=1000),
        pod("high", priority=100000),
    ]
    plan = plan_phases(BUCKETS, pods)
    assert [[t.name for t in phase.pods] for phase in plan.phases] == [
        ["low-a", "no-priority"],
        ["mid-a", "mid-b"],
        ["high", "critical"],
    ]
    assert [phase.priority for phase in plan.phases] == [0, 1000, 100000]


def test_buckets_given_out_of_order_are_sorted() -> None:
    """Buckets are run ascending by priority whatever order the config lists them in."""
    plan = plan_phases(tuple(reversed(BUCKETS)), [pod("a", priority=50)])
    assert [phase.priority for phase in plan.phases] == [0, 1000, 100000]
    assert plan.phases[0].pods[0].name == "a"


def test_deadline_offsets_are_cumulative_and_ranges_are_contiguous() -> None:
    """Each phase's deadline offset is the sum of budgets so far; ranges tile all priorities."""
    plan = plan_phases(BUCKETS, [])
    assert [p.deadline_offset_seconds for p in plan.phases] == [10, 30, 60]
    assert [(p.min_priority, p.max_priority) for p in plan.phases] == [
        (None, 999),
        (1000, 99999),
        (100000, None),
    ]
    assert plan.budget_seconds == 60 == budget_seconds(BUCKETS)


def test_empty_buckets_stay_in_the_plan_without_pods() -> None:
    """An empty bucket is still a phase (the run skips it at once), with no pods."""
    plan = plan_phases(BUCKETS, [pod("only", priority=100000)])
    assert [len(p.pods) for p in plan.phases] == [0, 0, 1]


@pytest.mark.parametrize(
    ("bucket_seconds", "own", "expected"),
    [
        (10, 30, 10),  # the bucket is shorter: the bucket's
        (10, 5, 5),  # the pod asks for less: the pod's
        (10, None, 10),  # unset: the API default (30) applies, so the bucket's
        (60, None, 30),
        (0, 30, MIN_API_GRACE_SECONDS),  # 0 would be a force delete: 1 s instead
        (10, 0, MIN_API_GRACE_SECONDS),
    ],
)
def test_grace_is_min_of_bucket_and_pod_never_zero(
    bucket_seconds: int, own: int | None, expected: int
) -> None:
    """Grace is min(bucket seconds, terminationGracePeriodSeconds), at least 1 s."""
    assert grace_seconds(pod("p", grace_seconds=own), bucket_seconds) == expected


def test_targets_carry_grace_uid_priority_and_bucket() -> None:
    """Each target names the pod by namespace/name/uid and carries its grace period, its own
    priority and its bucket's (the label its result is counted under)."""
    plan = plan_phases(BUCKETS, [pod("web", priority=1500, grace_seconds=8, namespace="shop")])
    (target,) = plan.phases[1].pods
    assert (target.key, target.uid, target.priority, target.grace_seconds, target.bucket) == (
        "shop/web",
        "uid-web",
        1500,
        8,
        1000,
    )


@pytest.mark.parametrize(
    ("joined_seconds", "expected"),
    [(30, 8), (5, 5), (0, MIN_API_GRACE_SECONDS)],
)
def test_a_target_stopped_in_another_phase_gets_that_phases_grace_at_most(
    joined_seconds: int, expected: int
) -> None:
    """A late pod stopped in a later phase keeps min(its grace, that phase's seconds), never
    a force delete, and keeps its own priority and bucket."""
    (target,) = plan_phases(BUCKETS, [pod("web", grace_seconds=8)]).phases[0].pods
    joined = target.within(joined_seconds)
    assert (joined.grace_seconds, joined.priority, joined.bucket) == (expected, 0, 0)


@pytest.mark.parametrize(
    ("the_pod", "reason"),
    [
        (pod("m", annotations={"kubernetes.io/config.mirror": "abc"}), "mirror"),
        (pod("s", annotations={"kubernetes.io/config.source": "file"}), "static"),
        (pod("d", owner=owner_ref("DaemonSet", "o")), "daemonset"),
        (pod("done", phase="Succeeded"), "finished"),
        (pod("failed", phase="Failed"), "finished"),
        (pod("api", annotations={"kubernetes.io/config.source": "api"}), None),
        (pod("rs", owner=owner_ref("ReplicaSet", "o")), None),
    ],
)
def test_skip_rules(the_pod: dict[str, Any], reason: str | None) -> None:
    """Mirror, static, DaemonSet and finished pods are left alone; others are ours."""
    assert skip_reason(the_pod, include_daemon_set_pods=False) == reason


def test_daemon_set_pods_are_included_when_configured() -> None:
    """includeDaemonSetPods: true makes DaemonSet pods ordinary targets (mirror pods still skip)."""
    pods = [
        pod("ds", owner=owner_ref("DaemonSet", "o")),
        pod(
            "mirror",
            owner=owner_ref("DaemonSet", "o"),
            annotations={"kubernetes.io/config.mirror": "x"},
        ),
    ]
    plan = plan_phases(BUCKETS, pods, include_daemon_set_pods=True)
    assert [t.name for t in plan.phases[0].pods] == ["ds"]
    assert [(s.name, s.reason) for s in plan.skipped] == [("mirror", "mirror")]


def test_skipped_pods_are_reported_not_planned() -> None:
    """Skipped pods appear in ``skipped`` with their reason and in no phase."""
    plan = plan_phases(BUCKETS, [pod("ds", owner=owner_ref("DaemonSet", "o")), pod("keep")])
    assert [(s.key, s.reason) for s in plan.skipped] == [("default/ds", "daemonset")]
    assert [t.name for p in plan.phases for t in p.pods] == ["keep"]


def test_legacy_config_gives_kubelets_two_buckets() -> None:
    """shutdownGracePeriod 30s / critical 10s: priority 0 gets 20 s, critical pods get 10 s."""
    buckets = priority_buckets(30.0, 10.0, ())
    plan = plan_phases(buckets, [pod("app"), pod("crit", priority=SYSTEM_CRITICAL_PRIORITY)])
    assert [(p.priority, p.budget_seconds, [t.name for t in p.pods]) for p in plan.phases] == [
        (0, 20, ["app"]),
        (SYSTEM_CRITICAL_PRIORITY, 10, ["crit"]),
    ]
    assert plan.budget_seconds == 30


def test_no_buckets_means_no_phases() -> None:
    """With shutdown handling off there is no plan at all."""
    plan = plan_phases((), [pod("a")])
    assert plan.phases == ()
    assert plan.budget_seconds == 0
