"""The shared evictor: limits checked Total -> PerNode -> PerNamespace, and PDBs applied as
the API server's eviction subresource applies them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.core.errors import (
    EvictionLimitReached,
    NamespaceLimitReached,
    NodeLimitReached,
    TotalLimitReached,
)
from agent.descheduler.core.evictions.limits import EvictionLimits
from agent.descheduler.core.evictions.planner import Planner
from agent.descheduler.model.cluster import PodInfo
from tests.harness.deschedulerstate import NOW, node, pdb, pod, snapshot


def _pod(name: str = "p", node_name: str = "n1", namespace: str = "a", **kwargs: Any) -> PodInfo:
    return project_pod(pod(name, node_name, namespace=namespace, **kwargs))


class TestLimits:
    @pytest.mark.parametrize(
        ("limits", "error"),
        [
            pytest.param(
                EvictionLimits(total=1, per_node=1, per_namespace=1),
                TotalLimitReached,
                id="total-first",
            ),
            pytest.param(
                EvictionLimits(total=5, per_node=1, per_namespace=1),
                NodeLimitReached,
                id="then-node",
            ),
            pytest.param(
                EvictionLimits(total=5, per_node=5, per_namespace=1),
                NamespaceLimitReached,
                id="then-namespace",
            ),
        ],
    )
    def test_order_of_checks(
        self, limits: EvictionLimits, error: type[EvictionLimitReached]
    ) -> None:
        """With every limit reached, the first in Total -> PerNode -> PerNamespace is raised."""
        limits.record(_pod())
        with pytest.raises(error):
            limits.check(_pod("q"))

    @pytest.mark.parametrize(
        ("limits", "second"),
        [
            pytest.param(EvictionLimits(per_node=1), _pod("q", node_name="n2"), id="other-node"),
            pytest.param(
                EvictionLimits(per_namespace=1), _pod("q", namespace="b"), id="other-namespace"
            ),
            pytest.param(EvictionLimits(), _pod("q"), id="no-limits"),
        ],
    )
    def test_limits_are_per_scope(self, limits: EvictionLimits, second: PodInfo) -> None:
        """A per-node or per-namespace limit does not stop evictions elsewhere."""
        limits.record(_pod())
        limits.check(second)

    def test_errors_carry_upstream_text(self) -> None:
        """Each limit error reads as upstream's (it becomes the metric's ``result`` label)."""
        assert (
            str(TotalLimitReached(1))
            == "maximum number of evicted pods per a descheduling cycle reached"
        )
        assert str(NodeLimitReached(1, "n")) == "maximum number of evicted pods per node reached"
        assert (
            str(NamespaceLimitReached(1, "a"))
            == "maximum number of evicted pods per namespace reached"
        )


def _planner(*items: dict[str, Any], limits: EvictionLimits | None = None) -> Planner:
    return Planner(snapshot(node("n1"), *items), limits or EvictionLimits())


def _pods_of(planner: Planner) -> dict[str, PodInfo]:
    return {p.name: p for p in planner.snapshot.pods_on("n1")}


class TestBudgets:
    @pytest.mark.parametrize(
        ("pod_kwargs", "budget_kwargs", "allowed"),
        [
            pytest.param({}, {"disruptions_allowed": 0}, False, id="running-ready-no-disruptions"),
            pytest.param({}, {"disruptions_allowed": 1}, True, id="running-ready-one-disruption"),
            pytest.param(
                {"phase": "Pending"}, {"disruptions_allowed": 0}, True, id="pending-skips-budget"
            ),
            pytest.param(
                {"phase": "Failed"}, {"disruptions_allowed": 0}, True, id="failed-skips-budget"
            ),
            pytest.param(
                {"ready": False}, {"disruptions_allowed": 0}, False, id="unready-if-healthy-budget"
            ),
            pytest.param(
                {"ready": False},
                {"disruptions_allowed": 0, "unhealthy_pod_eviction_policy": "AlwaysAllow"},
                True,
                id="unready-always-allow",
            ),
            pytest.param(
                {"labels": {"app": "other"}}, {"disruptions_allowed": 0}, True, id="not-selected"
            ),
        ],
    )
    def test_api_server_rules(
        self, pod_kwargs: dict[str, Any], budget_kwargs: dict[str, Any], allowed: bool
    ) -> None:
        """Only Running pods count against a budget; unready ones follow the policy."""
        labels = pod_kwargs.pop("labels", {"app": "x"})
        planner = _planner(
            pod("p", "n1", labels=labels, **pod_kwargs),
            pdb("b", match_labels={"app": "x"}, **budget_kwargs),
        )
        assert planner.evict(_pods_of(planner)["p"], plugin="T", profile="p")  # made or held
        assert planner.plan.evictions[0].blocked_by_pdb == ("" if allowed else "default/b")

    def test_budget_is_used_up_as_the_cycle_goes(self) -> None:
        """``disruptionsAllowed`` is decremented with each allowed eviction."""
        planner = _planner(
            *(pod(f"p{i}", "n1", labels={"app": "x"}) for i in range(3)),
            pdb("b", match_labels={"app": "x"}, disruptions_allowed=2),
        )
        pods = _pods_of(planner)
        for index in range(3):
            planner.evict(pods[f"p{index}"], plugin="T", profile="p")
        assert [e.blocked_by_pdb for e in planner.plan.evictions] == ["", "", "default/b"]

    def test_two_budgets_refuse(self) -> None:
        """A pod two budgets select cannot be evicted (the API server refuses it)."""
        planner = _planner(
            pod("p", "n1", labels={"app": "x"}),
            pdb("b1", match_labels={"app": "x"}, disruptions_allowed=5),
            pdb("b2", match_labels={}, disruptions_allowed=5),
        )
        planner.evict(_pods_of(planner)["p"], plugin="T", profile="p")
        assert planner.plan.evictions[0].blocked_by_pdb == "default/b1"

    def test_a_held_eviction_counts_against_the_limits_and_as_made(self) -> None:
        """An eviction a budget refuses now is held: listed as blocked, counted against the
        limits (the live loop may still send it) and reported to the plugin as made, so the
        plugin does not evict another pod in its place."""
        planner = _planner(
            pod("p", "n1", labels={"app": "x"}),
            pod("q", "n1"),
            pdb("b", match_labels={"app": "x"}),
            limits=EvictionLimits(total=1),
        )
        pods = _pods_of(planner)
        assert planner.evict(pods["p"], plugin="T", profile="p") is True
        with pytest.raises(TotalLimitReached):
            planner.evict(pods["q"], plugin="T", profile="p")
        assert [(e.name, e.blocked_by_pdb) for e in planner.plan.evictions] == [
            ("p", "default/b"),
        ]
        assert planner.plan.summary()["blockedByPDB"] == 1
        assert "uid-default-p" in planner.evicted

    def test_limit_refusal_is_not_planned_but_counted(self) -> None:
        """An eviction a limit refuses is not in the plan; it is counted for the metric."""
        planner = _planner(pod("p", "n1"), limits=EvictionLimits(total=0))
        with pytest.raises(TotalLimitReached):
            planner.evict(_pods_of(planner)["p"], plugin="T", profile="p")
        assert planner.plan.evictions == []
        assert planner.plan.limit_refusals == [
            {
                "result": "maximum number of evicted pods per a descheduling cycle reached",
                "strategy": "T",
                "profile": "p",
                "namespace": "default",
                "node": "n1",
            }
        ]

    def test_plan_records_owner_eviction_time(self) -> None:
        """Each allowed eviction stamps its owner with the snapshot's time (the churn memory)."""
        planner = _planner(pod("p", "n1"))
        planner.evict(_pods_of(planner)["p"], plugin="T", profile="p")
        assert planner.plan.owner_evictions == {"uid-ReplicaSet-rs": NOW}
