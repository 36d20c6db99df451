"""LowNodeUtilization and HighNodeUtilization: classification, order, budget, stopping rule,
and our opt-in extensions (real usage from NodeReports, the churn guard)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.core.cycle import CycleOptions, run_cycle
from agent.descheduler.core.plugins.nodeutilization.common import eviction_order, owner_of
from agent.descheduler.core.rules.podorder import round_robin_order
from agent.descheduler.model.cluster import NodeUsage
from agent.descheduler.plan.shape import Plan
from tests.harness.deschedulerstate import NOW, node, pdb, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

LNU = "LowNodeUtilization"
HNU = "HighNodeUtilization"
CPU_ONLY = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}


def _pods(
    node_name: str, count: int, cpu: str, prefix: str | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    prefix = prefix or node_name
    return [pod(f"{prefix}-{i}", node_name, cpu=cpu, **kwargs) for i in range(count)]


def _categories(plan: Plan, plugin: str = LNU) -> dict[str, str]:
    return {facts["node"]: facts["category"] for facts in plan.nodes if facts["plugin"] == plugin}


def _evicted(plan: Plan) -> list[str]:
    return [e.name for e in plan.allowed]


def _by_node(plan: Plan) -> dict[str, int]:
    counts: dict[str, int] = {}
    for eviction in plan.allowed:
        counts[eviction.node] = counts.get(eviction.node, 0) + 1
    return counts


class TestClassification:
    def test_static_thresholds(self) -> None:
        """Under: every listed resource <= thresholds and schedulable; over: any > target."""
        plan = run_cycle(
            policy((LNU, CPU_ONLY)),
            snapshot(
                node("low"),
                *_pods("low", 1, "400m"),
                node("mid"),
                *_pods("mid", 1, "1200m"),
                node("high"),
                *_pods("high", 1, "2400m"),
                node("cordoned", unschedulable=True),
                *_pods("cordoned", 1, "400m"),
            ),
        )
        assert _categories(plan) == {
            "low": "underutilized",
            "mid": "appropriately utilized",
            "high": "overutilized",
            "cordoned": "appropriately utilized",
        }

    @pytest.mark.parametrize(
        ("cpus", "expected"),
        [
            pytest.param(
                ("400m", "1200m", "2000m"),
                ("underutilized", "appropriately utilized", "overutilized"),
                id="mean-30-low-20-high-40",
            ),
            pytest.param(
                ("200m", "200m", "200m"),
                ("appropriately utilized",) * 3,
                id="all-at-the-mean",
            ),
        ],
    )
    def test_deviation_thresholds(self, cpus: tuple[str, ...], expected: tuple[str, ...]) -> None:
        """With ``useDeviationThresholds`` the limits are the mean minus/plus the thresholds."""
        args = {
            "thresholds": {"cpu": 10},
            "targetThresholds": {"cpu": 10},
            "useDeviationThresholds": True,
        }
        items = []
        for i, cpu in enumerate(cpus):
            items += [node(f"n{i}"), *_pods(f"n{i}", 1, cpu)]
        plan = run_cycle(policy((LNU, args)), snapshot(*items))
        assert tuple(_categories(plan)[f"n{i}"] for i in range(len(cpus))) == expected

    def test_deviation_clamps_to_zero(self) -> None:
        """A mean below the thresholds clamps the low limit to 0, so only idle nodes are under."""
        args = {
            "thresholds": {"cpu": 50},
            "targetThresholds": {"cpu": 1},
            "useDeviationThresholds": True,
        }
        plan = run_cycle(
            policy((LNU, args)),
            snapshot(node("idle"), node("busy"), pod("b", "busy", cpu="400m")),
        )
        assert _categories(plan) == {"idle": "underutilized", "busy": "overutilized"}


class TestEvictionOrder:
    def test_priority_then_qos_then_prefer_no_eviction(self) -> None:
        """Nil priority first, then low to high; BestEffort < Burstable < Guaranteed; pods
        with prefer-no-eviction after the others; then by name."""
        prefer = {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}
        guaranteed = {"cpu": "100m", "memory": "256Mi"}
        pods = [
            pod("high", "n", priority=100, cpu=None, memory=None),
            pod("guaranteed", "n", limits=guaranteed),
            pod("burstable", "n"),
            pod("best-effort-b", "n", cpu=None, memory=None),
            pod("best-effort-prefer", "n", cpu=None, memory=None, annotations=prefer),
            pod("best-effort-a", "n", cpu=None, memory=None),
            pod("nil", "n", priority=None),
        ]
        ordered = eviction_order([project_pod(p) for p in pods])
        assert [p.name for p in ordered] == [
            "nil",
            "best-effort-a",
            "best-effort-b",
            "best-effort-prefer",
            "burstable",
            "guaranteed",
            "high",
        ]

    def test_round_robin_by_owner_then_uid_without_pod_usage(self) -> None:
        """With no pod usage to weigh: upstream's keys first (``low``, priority -1); then
        each owner's first pod by uid, owners not yet evicted from (``x``, the bare pod)
        before those that were (``y``); then each owner's second pod, and so on. UIDs, not
        names: ``a-y`` would lead by name."""
        pods = [
            pod("x-1", "n", uid="c1", owner=owner_ref("ReplicaSet", "x")),
            pod("x-2", "n", uid="a2", owner=owner_ref("ReplicaSet", "x")),
            pod("x-3", "n", uid="b3", owner=owner_ref("ReplicaSet", "x")),
            pod("a-y", "n", uid="d4", owner=owner_ref("ReplicaSet", "y")),
            pod("a-y-2", "n", uid="f5", owner=owner_ref("ReplicaSet", "y")),
            pod("bare", "n", uid="e6", metadata={"ownerReferences": []}),
            pod("low", "n", uid="z7", owner=owner_ref("ReplicaSet", "y"), priority=-1),
        ]
        spent = {"uid-ReplicaSet-y"}
        ordered = round_robin_order([project_pod(p) for p in pods], owner_of, spent.__contains__)
        assert [p.name for p in ordered] == ["low", "x-2", "bare", "a-y", "x-3", "a-y-2", "x-1"]


def _skewed(**over_kwargs: Any) -> list[dict[str, Any]]:
    """``low`` at 20 % cpu (room 1200m up to 50 %), ``over`` at 100 % in eight 500m pods."""
    return [
        node("low"),
        pod("l", "low", cpu="800m"),
        node("over"),
        *_pods("over", 8, "500m", **over_kwargs),
    ]


class TestLowNodeUtilization:
    def test_stops_when_below_target(self) -> None:
        """A source node is drained only until no resource is above target."""
        state = snapshot(node("low"), node("over"), *_pods("over", 6, "500m"))
        plan = run_cycle(policy((LNU, CPU_ONLY)), state)
        assert _evicted(plan) == ["over-0", "over-1"]

    def test_budget_stops_the_run(self) -> None:
        """Evictions stop once a budget resource (room on under-utilized nodes) is used up."""
        plan = run_cycle(policy((LNU, CPU_ONLY)), snapshot(*_skewed()))
        assert _evicted(plan) == ["over-0", "over-1", "over-2"]

    @pytest.mark.parametrize(
        ("items", "args"),
        [
            pytest.param(
                [node("a"), node("b"), *_pods("b", 4, "500m")], CPU_ONLY, id="no-over-utilized"
            ),
            pytest.param(
                [node("a", unschedulable=True), *_skewed()[2:], pod("x", "a", cpu="1")],
                CPU_ONLY,
                id="no-under-utilized",
            ),
            pytest.param([node("a"), node("b")], CPU_ONLY, id="all-under-utilized"),
            pytest.param(
                _skewed(), {**CPU_ONLY, "numberOfNodes": 1}, id="under-count-at-most-numberOfNodes"
            ),
        ],
    )
    def test_stops_early(self, items: list[dict[str, Any]], args: dict[str, Any]) -> None:
        """No under- or over-utilized node, all under, or too few under: nothing is evicted."""
        assert run_cycle(policy((LNU, args)), snapshot(*items)).evictions == []

    def test_evictable_namespaces_exclude(self) -> None:
        """Pods of an excluded namespace stay where they are."""
        args = {**CPU_ONLY, "evictableNamespaces": {"exclude": ["default"]}}
        assert run_cycle(policy((LNU, args)), snapshot(*_skewed())).evictions == []

    def test_plugin_per_node_limit(self) -> None:
        """``evictionLimits.node`` caps this plugin's evictions per node."""
        args = {**CPU_ONLY, "evictionLimits": {"node": 1}}
        assert _evicted(run_cycle(policy((LNU, args)), snapshot(*_skewed()))) == ["over-0"]

    def test_pod_must_tolerate_a_destination(self) -> None:
        """A pod that tolerates no under-utilized node's taints is not evicted."""
        taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
        items = _skewed()
        items[0] = node("low", taints=[taint])
        assert run_cycle(policy((LNU, CPU_ONLY)), snapshot(*items)).evictions == []

    @pytest.mark.parametrize(
        ("order", "first"),
        [
            pytest.param("RawSum", "memory-heavy", id="raw-sum-memory-dominates"),
            pytest.param("Percentage", "cpu-heavy", id="percentage-opt-in"),
        ],
    )
    def test_source_node_order(self, order: str, first: str) -> None:
        """By default the node with the larger raw sum (memory bytes dominate) goes first."""
        args = {
            "thresholds": {"cpu": 20, "memory": 20},
            "targetThresholds": {"cpu": 50, "memory": 50},
            "sourceNodeOrder": order,
            "evictionLimits": {"node": 1},
        }
        items = [
            node("low"),
            node("cpu-heavy"),
            *_pods("cpu-heavy", 4, "950m", memory="100Mi"),
            node("memory-heavy"),
            *_pods("memory-heavy", 4, "100m", memory="2100Mi"),
        ]
        plan = run_cycle(policy((LNU, args)), snapshot(*items))
        assert plan.allowed[0].node == first

    def test_a_pod_its_pdb_refuses_is_not_held_and_the_next_is_tried(self) -> None:
        """A pod its PDB refuses now is refused, not held (its node's load, the reason, moves
        with the cycle's other evictions): its usage stays, and the plugin tries the next
        pod, as upstream does after the API server's 429; none of them is sent."""
        items = [
            *_skewed(labels={"app": "x"}),
            pdb("x", match_labels={"app": "x"}, disruptions_allowed=1),
        ]
        plan = run_cycle(policy((LNU, CPU_ONLY)), snapshot(*items))
        assert [(e.name, bool(e.blocked_by_pdb), e.held) for e in plan.evictions] == [
            ("over-0", False, False),
            *((f"over-{i}", True, False) for i in range(1, 8)),
        ]
        assert [e.name for e in plan.allowed] == ["over-0"]
        assert plan.held == []


def _report(
    node_name: str, cpu: int, pods: dict[str, int], *, stale: bool = False, **flags: bool
) -> NodeUsage:
    return NodeUsage(
        node=node_name,
        usage={"cpu": cpu, "memory": 0},
        pod_usage={uid: {"cpu": used, "memory": 0} for uid, used in pods.items()},
        stale=stale,
        shutting_down=flags.get("shutting_down", False),
        gated=flags.get("gated", False),
        agent_stopped=flags.get("agent_stopped", False),
    )


NODE_REPORTS = {**CPU_ONLY, "metricsUtilization": {"source": "NodeReports"}}


class TestNodeReports:
    def _state(self, hot_report: NodeUsage | None, **cold_flags: bool) -> Any:
        """``hot`` requests 10 % but really uses 90 %; ``cold`` is idle."""
        hot_pods = _pods("hot", 4, "100m")
        usage = {"cold": _report("cold", 0, {}, **cold_flags)}
        if hot_report is not None:
            usage["hot"] = hot_report
        return snapshot(node("cold"), node("hot"), *hot_pods, node_usage=usage)

    def test_drains_the_biggest_real_users_until_below_target(self) -> None:
        """On real usage, the hot node sheds its heaviest pods until it is under 50 %."""
        used = {
            "uid-default-hot-0": 400,
            "uid-default-hot-1": 1500,
            "uid-default-hot-2": 1000,
            "uid-default-hot-3": 700,
        }
        plan = run_cycle(policy((LNU, NODE_REPORTS)), self._state(_report("hot", 3600, used)))
        assert _evicted(plan) == ["hot-1", "hot-2"]
        assert {f["node"]: f["usageSource"] for f in plan.nodes} == {
            "cold": "NodeReports",
            "hot": "NodeReports",
        }

    @pytest.mark.parametrize(
        ("report", "fallback"),
        [
            pytest.param(_report("hot", 3600, {}, stale=True), "stale", id="stale"),
            pytest.param(None, "missing", id="missing"),
        ],
    )
    def test_stale_or_missing_report_falls_back_to_requests(
        self, report: NodeUsage | None, fallback: str
    ) -> None:
        """Without a fresh report the node is judged by requests, and the plan says so."""
        plan = run_cycle(policy((LNU, NODE_REPORTS)), self._state(report))
        assert plan.evictions == []
        (hot,) = [f for f in plan.nodes if f["node"] == "hot"]
        assert (hot["usageSource"], hot["fallback"], hot["category"]) == (
            "requests",
            fallback,
            "underutilized",
        )

    @pytest.mark.parametrize("flag", ["shutting_down", "gated", "agent_stopped"])
    def test_node_going_away_is_never_room(self, flag: str) -> None:
        """A node whose agent reports it shutting down, gated or stopped is not under-utilized."""
        used = {"uid-default-hot-1": 1500}
        plan = run_cycle(
            policy((LNU, NODE_REPORTS)), self._state(_report("hot", 3600, used), **{flag: True})
        )
        assert plan.evictions == []
        assert _categories(plan)["cold"] == "appropriately utilized"


class TestChurnGuard:
    @pytest.mark.parametrize(
        ("last", "evicted"),
        [
            pytest.param(NOW - 30, [], id="within-cooldown"),
            pytest.param(NOW - 300, ["over-0"], id="after-cooldown"),
        ],
    )
    def test_owner_that_lost_a_pod_recently_keeps_the_rest(
        self, last: float, evicted: list[str]
    ) -> None:
        """With ``cooldownSeconds``, no pod goes whose owner lost one within the cooldown."""
        args = {**CPU_ONLY, "cooldownSeconds": 120}
        options = CycleOptions(owner_evictions={"uid-ReplicaSet-rs": last})
        plan = run_cycle(policy((LNU, args)), snapshot(*_skewed()), options)
        assert _evicted(plan) == evicted

    def test_cooldown_counts_this_cycles_evictions(self) -> None:
        """An owner loses at most one pod per cooldown, this cycle included."""
        args = {**CPU_ONLY, "cooldownSeconds": 120}
        plan = run_cycle(policy((LNU, args)), snapshot(*_skewed()))
        assert _evicted(plan) == ["over-0"]
        assert plan.owner_evictions == {"uid-ReplicaSet-rs": NOW}

    def test_off_by_default_but_remembered(self) -> None:
        """Without ``cooldownSeconds`` decisions are upstream's; this cycle's evictions are
        still remembered, and older ones are forgotten."""
        plan = run_cycle(
            policy((LNU, CPU_ONLY)),
            snapshot(*_skewed()),
            CycleOptions(owner_evictions={"other": 1.0}),
        )
        assert len(plan.allowed) == 3
        assert plan.owner_evictions == {"uid-ReplicaSet-rs": NOW}

    @pytest.mark.parametrize(
        ("age", "kept"),
        [
            pytest.param(100.0, True, id="within-the-longest-cooldown"),
            pytest.param(130.0, False, id="past-the-longest-cooldown"),
        ],
    )
    def test_memory_kept_as_long_as_the_longest_cooldown(self, age: float, kept: bool) -> None:
        """An owner's last eviction is remembered while some cooldown could still use it."""
        args = {**CPU_ONLY, "cooldownSeconds": 120}
        options = CycleOptions(owner_evictions={"other": NOW - age})
        plan = run_cycle(policy((LNU, args)), snapshot(node("a"), node("b")), options)
        assert ("other" in plan.owner_evictions) is kept


class TestHighNodeUtilization:
    def test_empties_under_utilized_nodes_onto_the_others(self) -> None:
        """Pods of nodes under the thresholds go, while the destinations have room."""
        state = snapshot(
            node("sparse"), *_pods("sparse", 2, "200m"), node("dense"), *_pods("dense", 4, "500m")
        )
        plan = run_cycle(policy((HNU, {"thresholds": {"cpu": 20}})), state)
        assert _evicted(plan) == ["sparse-0", "sparse-1"]
        assert _categories(plan, HNU) == {"sparse": "underutilized", "dense": "overutilized"}

    def test_a_pod_its_pdb_refuses_is_held(self) -> None:
        """Emptying a node only makes it emptier, so a pod its PDB refuses now is held (sent
        once the budget allows, in the same cycle), unlike LowNodeUtilization's."""
        state = snapshot(
            node("sparse"),
            *_pods("sparse", 2, "200m", labels={"app": "x"}),
            node("dense"),
            *_pods("dense", 4, "500m"),
            pdb("x", match_labels={"app": "x"}, disruptions_allowed=1),
        )
        plan = run_cycle(policy((HNU, {"thresholds": {"cpu": 20}})), state)
        assert [(e.name, bool(e.blocked_by_pdb), e.held) for e in plan.evictions] == [
            ("sparse-0", False, False),
            ("sparse-1", True, True),
        ]

    def test_sources_in_ascending_usage(self) -> None:
        """The emptiest node is emptied first."""
        state = snapshot(
            node("a"),
            *_pods("a", 2, "300m"),
            node("b"),
            *_pods("b", 1, "100m"),
            node("dense"),
            *_pods("dense", 4, "500m"),
        )
        plan = run_cycle(policy((HNU, {"thresholds": {"cpu": 20}})), state)
        assert [e.node for e in plan.allowed] == ["b", "a", "a"]

    def test_unschedulable_destination_is_no_room(self) -> None:
        """With every other node cordoned there is nowhere to go, so nothing is evicted."""
        state = snapshot(
            node("sparse"),
            *_pods("sparse", 2, "200m"),
            node("dense", unschedulable=True),
            *_pods("dense", 4, "500m"),
        )
        assert run_cycle(policy((HNU, {"thresholds": {"cpu": 20}})), state).evictions == []

    def test_budget_is_the_destinations_free_capacity(self) -> None:
        """Evictions stop once the destinations' free capacity is used up."""
        state = snapshot(
            node("sparse"), *_pods("sparse", 3, "700m"), node("dense"), *_pods("dense", 5, "680m")
        )
        plan = run_cycle(policy((HNU, {"thresholds": {"cpu": 60}})), state)
        assert _evicted(plan) == ["sparse-0"]

    def test_only_thresholding_resources(self) -> None:
        """``OnlyThresholdingResources`` keeps pods requesting none of the thresholds resources."""
        state = snapshot(
            node("sparse"),
            pod("no-cpu", "sparse", cpu=None),
            pod("cpu", "sparse"),
            node("dense"),
            *_pods("dense", 4, "500m"),
        )
        args = {"thresholds": {"cpu": 20}, "evictionModes": ["OnlyThresholdingResources"]}
        assert _evicted(run_cycle(policy((HNU, args)), state)) == ["cpu"]

    def test_each_node_it_evicts_from_is_asked_for_the_emptying_taint(self) -> None:
        """One soft taint per source node that loses a pod (a held one counts), in the order
        the nodes were emptied; an under-utilized node with nothing to evict gets none."""
        state = snapshot(
            node("a"),
            *_pods("a", 2, "300m"),
            node("b"),
            *_pods("b", 1, "100m", labels={"app": "x"}),
            node("idle"),
            node("dense"),
            *_pods("dense", 4, "500m"),
            pdb("x", match_labels={"app": "x"}, disruptions_allowed=0),
        )
        plan = run_cycle(policy((HNU, {"thresholds": {"cpu": 20}})), state)
        assert [(e.node, e.blocked_by_pdb) for e in plan.evictions] == [
            ("b", "default/x"),
            ("a", ""),
            ("a", ""),
        ]
        assert plan.evictions[0].held
        assert [(t.node, t.taint, t.add, t.plugin) for t in plan.taints] == [
            ("b", "kubelet-companion.io/emptying=HighNodeUtilization:PreferNoSchedule", True, HNU),
            ("a", "kubelet-companion.io/emptying=HighNodeUtilization:PreferNoSchedule", True, HNU),
        ]

    def test_our_emptying_taint_does_not_make_a_destination_intolerable(self) -> None:
        """A cold node still carrying our soft emptying taint (a HighNodeUtilization cycle's)
        is room like any other: the taint steers the scheduler only, never our decisions."""
        emptying = {
            "key": "kubelet-companion.io/emptying",
            "value": "HighNodeUtilization",
            "effect": "PreferNoSchedule",
        }
        state = snapshot(node("hot"), *_pods("hot", 4, "700m"), node("cold", taints=[emptying]))
        assert _by_node(run_cycle(policy((LNU, CPU_ONLY)), state)) == {"hot": 2}

    def test_taint_source_nodes_false_asks_for_no_taint(self) -> None:
        """``taintSourceNodes: false`` leaves the nodes as upstream would: evictions only."""
        state = snapshot(
            node("sparse"), *_pods("sparse", 2, "200m"), node("dense"), *_pods("dense", 4, "500m")
        )
        args = {"thresholds": {"cpu": 20}, "taintSourceNodes": False}
        plan = run_cycle(policy((HNU, args)), state)
        assert _evicted(plan) == ["sparse-0", "sparse-1"]
        assert plan.taints == []
