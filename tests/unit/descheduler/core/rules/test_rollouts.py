"""Implicit budgets: a workload without a PodDisruptionBudget loses no more pods at once than
its rollout would take down (the controllers' own rounding, at least one), the planner holds
the evictions beyond that, and the real-usage order spreads a node's evictions over owners."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agent.descheduler.cache.workloads import project_workload
from agent.descheduler.core.cycle import CycleOptions, run_cycle
from agent.descheduler.core.evictions.limits import EvictionLimits
from agent.descheduler.core.evictions.planner import Planner
from agent.descheduler.core.rules.podorder import spread_order
from agent.descheduler.core.rules.rollouts import (
    Rollouts,
    deployment_max_unavailable,
    implicit_max_unavailable,
    scaled,
    stateful_set_max_unavailable,
)
from agent.descheduler.model.cluster import ClusterSnapshot, NodeUsage, PodInfo, WorkloadInfo
from agent.descheduler.plan.render import render_table
from agent.descheduler.plan.shape import ImplicitBudget
from tests.harness import kubeobjects
from tests.harness.deschedulerstate import node, pdb, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

LNU = "LowNodeUtilization"
WEB = "Deployment default/web"


def _workload(kind: str, name: str, **fields: Any) -> WorkloadInfo:
    return project_workload(
        kubeobjects.workload(kind, name, uid=f"uid-{kind}-{name}", **fields), kind
    )


def _deployment(name: str, replicas: int, **fields: Any) -> list[WorkloadInfo]:
    """A Deployment and its one ReplicaSet ``<name>-1`` (the pods' owner)."""
    return [
        _workload("Deployment", name, replicas=replicas, **fields),
        _workload(
            "ReplicaSet", f"{name}-1", replicas=replicas, owner=owner_ref("Deployment", name)
        ),
    ]


def _replicas(owner: str, count: int, node_name: str = "n1", **fields: Any) -> list[Any]:
    """``count`` Running, Ready pods of ReplicaSet ``owner``, labelled ``app=<owner>``."""
    return [
        pod(
            f"{owner}-{i}",
            node_name,
            owner=owner_ref("ReplicaSet", owner),
            labels={"app": owner},
            **fields,
        )
        for i in range(count)
    ]


def _with(state: ClusterSnapshot, *workloads: WorkloadInfo) -> ClusterSnapshot:
    return dataclasses.replace(state, workloads={w.uid: w for w in workloads})


def _pods(state: ClusterSnapshot) -> dict[str, PodInfo]:
    return {p.name: p for pods in state.pods_by_node.values() for p in pods}


class TestArithmetic:
    @pytest.mark.parametrize(
        ("value", "total", "up", "down"),
        [
            pytest.param("25%", 12, 3, 3, id="exact"),
            pytest.param("25%", 10, 3, 2, id="2.5"),
            pytest.param("25%", 3, 1, 0, id="0.75"),
            pytest.param("1%", 2, 1, 0, id="0.02"),
            pytest.param("100%", 7, 7, 7, id="whole"),
            pytest.param(4, 10, 4, 4, id="a-count-is-a-count"),
        ],
    )
    def test_scaled_rounds_as_intstr_does(self, value: Any, total: int, up: int, down: int) -> None:
        """``GetScaledValueFromIntOrPercent``: a percentage of the total, rounded up or down."""
        assert scaled(value, total, round_up=True) == up
        assert scaled(value, total, round_up=False) == down

    @pytest.mark.parametrize(
        ("replicas", "strategy", "surge", "unavailable", "expected"),
        [
            pytest.param(12, "", None, None, 3, id="default-25-of-12"),
            pytest.param(10, "RollingUpdate", None, None, 2, id="default-rounds-down"),
            pytest.param(3, "RollingUpdate", None, None, 0, id="small-surges-instead"),
            pytest.param(2, "RollingUpdate", "0%", "1%", 1, id="both-fenceposts-zero"),
            pytest.param(10, "RollingUpdate", 0, "30%", 3, id="percent"),
            pytest.param(10, "RollingUpdate", 1, 5, 5, id="count"),
            pytest.param(4, "RollingUpdate", 0, 10, 4, id="at-most-the-replicas"),
            pytest.param(12, "Recreate", None, None, 0, id="recreate-has-none"),
            pytest.param(0, "RollingUpdate", None, None, 0, id="no-replicas"),
        ],
    )
    def test_deployment_max_unavailable_is_the_controllers(
        self, replicas: int, strategy: str, surge: Any, unavailable: Any, expected: int
    ) -> None:
        """``deploymentutil.MaxUnavailable``: maxUnavailable rounded down, maxSurge up; both
        zero makes unavailable 1; at most the replicas; 0 unless a rolling update."""
        assert deployment_max_unavailable(replicas, strategy, surge, unavailable) == expected

    @pytest.mark.parametrize(
        ("replicas", "unavailable", "expected"),
        [
            pytest.param(5, None, 1, id="default-one"),
            pytest.param(10, "25%", 2, id="percent-rounds-down"),
            pytest.param(3, "10%", 1, id="at-least-one"),
            pytest.param(10, 3, 3, id="count"),
        ],
    )
    def test_stateful_set_max_unavailable_is_the_controllers(
        self, replicas: int, unavailable: Any, expected: int
    ) -> None:
        """The StatefulSet controller's: default 1, a percentage rounded down, at least 1."""
        assert stateful_set_max_unavailable(replicas, unavailable) == expected

    @pytest.mark.parametrize(
        ("workload", "expected"),
        [
            pytest.param(_workload("Deployment", "d", replicas=12), 3, id="deployment-default"),
            pytest.param(
                _workload("Deployment", "d", replicas=12, max_unavailable="50%"),
                6,
                id="deployment-percent",
            ),
            pytest.param(
                _workload("Deployment", "d", replicas=3), 1, id="small-deployment-one-at-a-time"
            ),
            pytest.param(
                _workload("Deployment", "d", replicas=5, max_unavailable=0, max_surge=1),
                1,
                id="surge-only-one-at-a-time",
            ),
            pytest.param(
                _workload("Deployment", "d", replicas=12, strategy="Recreate"),
                3,
                id="recreate-gets-the-default-share",
            ),
            pytest.param(_workload("ReplicaSet", "r", replicas=12), 3, id="bare-replicaset"),
            pytest.param(_workload("StatefulSet", "s", replicas=12), 1, id="statefulset-one"),
            pytest.param(
                _workload("StatefulSet", "s", replicas=12, max_unavailable="25%"),
                3,
                id="statefulset-set",
            ),
            pytest.param(
                _workload("StatefulSet", "s", replicas=12, strategy="OnDelete"),
                1,
                id="statefulset-on-delete",
            ),
        ],
    )
    def test_implicit_share(self, workload: WorkloadInfo, expected: int) -> None:
        """The implicit budget's share: the rollout's, Recreate and bare ReplicaSets the
        default rolling update's, never below one."""
        assert implicit_max_unavailable(workload) == expected

    @pytest.mark.parametrize(
        ("healthy", "allowed"),
        [
            pytest.param(12, 3, id="all-ready"),
            pytest.param(10, 1, id="two-unready"),
            pytest.param(9, 0, id="three-unready"),
            pytest.param(5, 0, id="never-negative"),
            pytest.param(13, 4, id="a-surge-pod-allows-one-more"),
        ],
    )
    def test_disruptions_allowed_as_a_pdb_with_max_unavailable(
        self, healthy: int, allowed: int
    ) -> None:
        """``maxUnavailable - (desired - healthy)``: 12 replicas, 3 at once."""
        budget = ImplicitBudget(key=WEB, desired=12, max_unavailable=3, members=frozenset())
        assert budget.allows(healthy) == allowed


class TestWorkloadOfAPod:
    def test_a_deployments_pods_count_across_its_replica_sets(self) -> None:
        """A Deployment's budget counts the Ready pods of every ReplicaSet it controls (a
        rollout in progress), not those unready, pending or being deleted."""
        old, new = "web-old", "web-new"
        workloads = [
            _workload("Deployment", "web", replicas=8),
            *(
                _workload("ReplicaSet", rs, replicas=4, owner=owner_ref("Deployment", "web"))
                for rs in (old, new)
            ),
        ]
        state = _with(
            snapshot(
                node("n1"),
                *_replicas(old, 4),
                *_replicas(new, 2),
                pod("web-new-u", "n1", owner=owner_ref("ReplicaSet", new), ready=False),
                pod("web-new-p", "n1", owner=owner_ref("ReplicaSet", new), phase="Pending"),
                pod("web-new-d", "n1", owner=owner_ref("ReplicaSet", new), deleting=True),
            ),
            *workloads,
        )
        rollouts = Rollouts(state)
        budget = rollouts.of(_pods(state)["web-old-0"])
        assert budget is not None
        assert (budget.key, budget.desired, budget.max_unavailable, budget.fallback) == (
            WEB,
            8,
            2,
            False,
        )
        assert budget.members == {"uid-ReplicaSet-web-old", "uid-ReplicaSet-web-new"}
        assert rollouts.of(_pods(state)["web-new-0"]) == budget
        assert rollouts.healthy(budget) == 6
        assert rollouts.allowed(budget) == 0  # 2 of 8 already unavailable

    def test_without_its_workload_the_pods_seen_stand_in_and_it_says_so(self) -> None:
        """A snapshot without the workloads: the controller's pods seen are its replicas,
        with the Deployment default's share, and the budget is marked as a fallback."""
        state = snapshot(node("n1"), *_replicas("web-1", 8))
        budget = Rollouts(state).of(_pods(state)["web-1-0"])
        assert budget == ImplicitBudget(
            key="ReplicaSet default/web-1",
            desired=8,
            max_unavailable=2,
            members=frozenset({"uid-ReplicaSet-web-1"}),
            fallback=True,
        )

    def test_a_replica_set_whose_deployment_is_missing_stands_alone(self) -> None:
        """A ReplicaSet is known but its Deployment is not: the ReplicaSet's replicas, the
        default share, said to be a fallback."""
        state = _with(snapshot(node("n1"), *_replicas("web-1", 4)), _deployment("web", 12)[1])
        budget = Rollouts(state).of(_pods(state)["web-1-0"])
        assert budget is not None
        assert (budget.key, budget.desired, budget.max_unavailable, budget.fallback) == (
            "ReplicaSet default/web-1",
            12,
            3,
            True,
        )

    def test_a_controller_missing_from_complete_caches_does_not_exist(self) -> None:
        """Live, the caches hold every workload: pods whose controller is not among them are
        orphans nothing will replace, so they have no implicit budget; a ReplicaSet whose
        Deployment is gone stands alone, no fallback."""
        kinds = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})
        orphan_rs = _deployment("web", 12)[1]
        state = dataclasses.replace(
            _with(
                snapshot(
                    node("n1"),
                    *_replicas("web-1", 4),
                    pod("gone", "n1", owner=owner_ref("ReplicationController", "gone")),
                ),
                orphan_rs,
            ),
            workload_kinds=kinds,
        )
        rollouts = Rollouts(state)
        assert rollouts.of(_pods(state)["gone"]) is None
        budget = rollouts.of(_pods(state)["web-1-0"])
        assert budget is not None
        assert (budget.key, budget.fallback) == ("ReplicaSet default/web-1", False)

    def test_a_replication_controller_has_the_default_share(self) -> None:
        """A ReplicationController has no rollout: 25 % of its replicas, at least one."""
        rc = _workload("ReplicationController", "legacy", replicas=8)
        state = _with(
            snapshot(
                node("n1"),
                pod("legacy-0", "n1", owner=owner_ref("ReplicationController", "legacy")),
            ),
            rc,
        )
        budget = Rollouts(state).of(_pods(state)["legacy-0"])
        assert budget is not None
        assert (budget.key, budget.desired, budget.max_unavailable) == (
            "ReplicationController default/legacy",
            8,
            2,
        )

    @pytest.mark.parametrize(
        "owner",
        [
            pytest.param(owner_ref("Job", "j"), id="job"),
            pytest.param(owner_ref("DaemonSet", "ds"), id="daemonset"),
            pytest.param(None, id="bare-pod"),
        ],
    )
    def test_pods_of_other_controllers_have_none(self, owner: Any) -> None:
        """Jobs, DaemonSets (never evicted anyway) and bare pods have no implicit budget."""
        fields = {"owner": owner} if owner is not None else {"metadata": {"ownerReferences": []}}
        raw = pod("p", "n1", **fields)
        if owner is None:
            raw["metadata"].pop("ownerReferences", None)
        state = snapshot(node("n1"), raw)
        assert Rollouts(state).of(_pods(state)["p"]) is None

    def test_a_replica_set_of_another_controller_has_none(self) -> None:
        """A ReplicaSet another controller rolls out (an Argo Rollout) has no implicit budget:
        its rollout is not a Deployment's."""
        rs = _workload("ReplicaSet", "web-1", replicas=4, owner=owner_ref("Rollout", "web"))
        state = _with(snapshot(node("n1"), *_replicas("web-1", 4)), rs)
        assert Rollouts(state).of(_pods(state)["web-1-0"]) is None


class TestPlanner:
    def _planner(self, *items: Any, implicit: bool = True, replicas: int = 12) -> Planner:
        state = _with(snapshot(node("n1"), *items), *_deployment("web", replicas))
        return Planner(state, EvictionLimits(), implicit_budgets=implicit)

    def test_evictions_beyond_the_budget_are_held(self) -> None:
        """12 Ready pods of a Deployment without a PDB: 3 go at once, the other 9 are held by
        its implicit budget, and every one is reported to the plugin as made."""
        planner = self._planner(*_replicas("web-1", 12))
        pods = _pods(planner.snapshot)
        assert all(planner.evict(pods[f"web-1-{i}"], plugin="T", profile="p") for i in range(12))
        plan = planner.plan
        assert [e.name for e in plan.at_once] == ["web-1-0", "web-1-1", "web-1-2"]
        assert [e.implicit_budget for e in plan.held] == [WEB] * 9
        assert all(e.held and not e.blocked_by_pdb for e in plan.held)
        assert {e.budget for e in plan.evictions} == {WEB}
        assert len(plan.allowed) == 12  # no PDB blocks any: only when they go changes
        assert plan.summary()["heldByImplicitBudget"] == 9
        assert plan.implicit_budgets[WEB].desired == 12
        assert "9 held by their workload's implicit budget" in render_table(plan)
        assert f"implicit: {WEB}" in render_table(plan)

    def test_a_plugin_that_does_not_hold_still_has_them_held(self) -> None:
        """``hold=False`` (LowNodeUtilization's, for PDBs) does not make an implicit budget
        refuse: the plugin's decisions stay as they are, only their time changes."""
        planner = self._planner(*_replicas("web-1", 4), replicas=4)
        pods = _pods(planner.snapshot)
        made = [
            planner.evict(pods[f"web-1-{i}"], plugin="T", profile="p", hold=False) for i in range(3)
        ]
        assert made == [True, True, True]
        assert [e.implicit_budget for e in planner.plan.evictions] == ["", WEB, WEB]
        assert planner.plan.refused == []

    def test_unavailable_pods_are_counted_and_unready_ones_go_free(self) -> None:
        """Two of 12 unready: the budget allows 3 - 2 = 1 Ready pod now; an unready pod goes
        without using it (it is unavailable already)."""
        planner = self._planner(
            *_replicas("web-1", 10),
            *(
                pod(f"web-1-u{i}", "n1", owner=owner_ref("ReplicaSet", "web-1"), ready=False)
                for i in range(2)
            ),
        )
        pods = _pods(planner.snapshot)
        for name in ("web-1-u0", "web-1-0", "web-1-1"):
            planner.evict(pods[name], plugin="T", profile="p")
        assert [(e.name, e.implicit_budget) for e in planner.plan.evictions] == [
            ("web-1-u0", ""),
            ("web-1-0", ""),
            ("web-1-1", WEB),
        ]

    def test_a_pdb_is_the_users_word(self) -> None:
        """Where a PDB selects the pods, it alone applies: 5 disruptions allowed, 5 go, the
        rest are the PDB's, none an implicit budget's."""
        planner = self._planner(
            *_replicas("web-1", 12),
            pdb("web", match_labels={"app": "web-1"}, disruptions_allowed=5),
        )
        pods = _pods(planner.snapshot)
        for i in range(8):
            planner.evict(pods[f"web-1-{i}"], plugin="T", profile="p")
        assert [bool(e.blocked_by_pdb) for e in planner.plan.evictions] == [False] * 5 + [True] * 3
        assert all(not e.implicit_budget for e in planner.plan.evictions)
        assert planner.plan.implicit_budgets == {}

    def test_off_nothing_is_held(self) -> None:
        """With implicit budgets off every eviction goes at once, as upstream's would."""
        planner = self._planner(*_replicas("web-1", 12), implicit=False)
        pods = _pods(planner.snapshot)
        for i in range(12):
            planner.evict(pods[f"web-1-{i}"], plugin="T", profile="p")
        assert len(planner.plan.at_once) == 12
        assert planner.plan.implicit_budgets == {}


def _usage(node_name: str, pods: dict[str, int]) -> NodeUsage:
    return NodeUsage(
        node=node_name,
        usage={"cpu": sum(pods.values()), "memory": 0},
        pod_usage={uid: {"cpu": used, "memory": 0} for uid, used in pods.items()},
        stale=False,
        shutting_down=False,
        gated=False,
        agent_stopped=False,
    )


class TestSpreadOrder:
    def test_owners_go_in_waves_of_their_share_biggest_first_within_one(self) -> None:
        """Equal keys: ``web`` (8 replicas: 2 at once) has 4 big pods, ``api`` (4: 1 at once)
        2 smaller ones, a bare pod is smaller still. Each owner's share of its biggest pods
        goes first, biggest first, then the next wave; a lower priority always goes first."""
        state = _with(
            snapshot(
                node("n1"),
                *_replicas("web-1", 4),
                *_replicas("api-1", 2),
                pod("bare", "n1", metadata={"ownerReferences": []}),
                pod("low", "n1", owner=owner_ref("ReplicaSet", "web-1"), priority=-1),
            ),
            *_deployment("web", 8),
            *_deployment("api", 4),
        )
        used = {"web-1-0": 900, "web-1-1": 800, "web-1-2": 700, "web-1-3": 600}
        used |= {"api-1-0": 300, "api-1-1": 200, "bare": 100, "low": 1}
        rollouts = Rollouts(state)
        ordered = spread_order(_pods(state).values(), lambda p: (used[p.name], 0), rollouts.of)
        assert [p.name for p in ordered] == [
            "low",
            "web-1-0",
            "web-1-1",
            "api-1-0",
            "bare",
            "web-1-2",
            "web-1-3",
            "api-1-1",
        ]

    def test_on_real_usage_a_hot_node_sheds_several_owners(self) -> None:
        """LowNodeUtilization on real usage: the hot node's biggest users are 12 pods of one
        Deployment (3 at once), with 4 single-replica workloads using a little less. It sheds
        3 of the Deployment, then the others, before more of the Deployment."""
        web = {f"uid-default-web-1-{i}": 300 - i for i in range(12)}
        small = {f"uid-default-s{i}-1-0": 250 for i in range(4)}
        items = [node("hot"), node("cold"), *_replicas("web-1", 12, "hot")]
        items += [p for i in range(4) for p in _replicas(f"s{i}-1", 1, "hot")]
        workloads = _deployment("web", 12)
        for i in range(4):
            workloads += _deployment(f"s{i}", 1)
        state = dataclasses.replace(
            _with(snapshot(*items), *workloads),
            node_usage={"hot": _usage("hot", web | small), "cold": _usage("cold", {})},
        )
        args = {
            "thresholds": {"cpu": 20},
            "targetThresholds": {"cpu": 50},
            "metricsUtilization": {"source": "NodeReports"},
        }
        plan = run_cycle(policy((LNU, args)), state)
        owners = [e.name.rsplit("-", 2)[0] for e in plan.evictions]
        assert owners[:7] == ["web", "web", "web", "s0", "s1", "s2", "s3"]
        assert all(not e.implicit_budget for e in plan.evictions[:7])
        unspread = run_cycle(policy((LNU, args)), state, CycleOptions(implicit_budgets=False))
        assert [e.name for e in unspread.evictions] == [e.name for e in plan.evictions]

    def test_on_requests_the_order_is_upstreams(self) -> None:
        """Upstream's policy on requests keeps upstream's order, owners or not: ``a`` (4
        replicas, 1 at once) loses three pods in name order, held by its budget, rather than
        ``b``'s pod coming second (the parity tests hold this on the 1,000-node state)."""
        items = [node("hot"), node("cold"), *_replicas("a-1", 4, "hot", cpu="800m")]
        items += _replicas("b-1", 1, "hot", cpu="800m")
        state = _with(snapshot(*items), *_deployment("a", 4), *_deployment("b", 1))
        plan = run_cycle(
            policy((LNU, {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}})), state
        )
        assert [(e.name, e.implicit_budget) for e in plan.evictions] == [
            ("a-1-0", ""),
            ("a-1-1", "Deployment default/a"),
            ("a-1-2", "Deployment default/a"),
        ]
