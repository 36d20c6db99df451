"""Placement: where an evicted pod lands, as a default kube-scheduler would pick (its filters,
then its default score plugins; every node tied at the best score a candidate, the first by
name the destination), with the pods the plan placed earlier counted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.descheduler.core.placement.profile import (
    BALANCED,
    DEFAULT_PROFILE,
    DEFAULT_WEIGHTS,
    MOST_ALLOCATED,
    SPREAD,
    TAINTS,
    SchedulerProfile,
)
from agent.descheduler.core.placement.replacements import (
    BLOCKED,
    DAEMON_POD,
    FINISHED_NOTE,
    HELD_BY_IMPLICIT_BUDGET,
    NOT_RECREATED,
    REFUSED,
    place,
    with_destinations,
    with_taint_changes,
)
from agent.descheduler.core.plugins.nodeutilization.highnodeutilization import emptying_change
from agent.descheduler.model.cluster import ClusterSnapshot, NodeUsage
from agent.descheduler.plan.shape import Plan, PlannedEviction, TaintChange
from tests.harness.deschedulerstate import node, pod, snapshot
from tests.harness.kubeobjects import owner_ref

GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
EDGE_TAINT = {"key": "dedicated", "value": "edge", "effect": "NoExecute"}
SOFT_TAINT = {"key": "soft", "effect": "PreferNoSchedule"}


def _eviction(
    state: ClusterSnapshot, name: str, *, blocked: str = "", held: bool = True
) -> PlannedEviction:
    found = next(p for pods in state.pods_by_node.values() for p in pods if p.name == name)
    return PlannedEviction(
        namespace=found.namespace,
        name=found.name,
        uid=found.uid,
        node=found.node_name,
        plugin="LowNodeUtilization",
        profile="p",
        reason="test",
        blocked_by_pdb=blocked,
        held=bool(blocked) and held,
    )


def _destinations(state: ClusterSnapshot, *names: str, window: int = 8) -> list[str | None]:
    result = place(state, [_eviction(state, name) for name in names], window=window)
    return [placement.node for placement in result.placements]


def _usage(node_name: str, **flags: bool) -> NodeUsage:
    return NodeUsage(
        node=node_name,
        usage={},
        pod_usage={},
        stale=False,
        shutting_down=flags.get("shutting_down", False),
        gated=flags.get("gated", False),
        agent_stopped=flags.get("agent_stopped", False),
    )


def _zone(zone: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": [zone]},
                        ]
                    }
                ]
            }
        }
    }


def _big_node(**fields: Any) -> dict[str, Any]:
    """``big``: 16 CPUs and 64 GiB, empty, as ``fields`` change it."""
    return node("big", cpu="16", memory="64Gi", **fields)


# An empty big node ("big") wins LeastAllocated whenever the filters let the pod go there;
# "small" is the fallback, "src" is where the evicted pod runs.
@pytest.mark.parametrize(
    ("big", "moving", "usage", "expected"),
    [
        pytest.param(_big_node(), {}, None, "big", id="emptiest-wins"),
        pytest.param(
            _big_node(taints=[GPU_TAINT]),
            {},
            None,
            "small",
            id="untolerated-noschedule-taint",
        ),
        pytest.param(
            _big_node(taints=[GPU_TAINT]),
            {"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            None,
            "big",
            id="tolerated-noschedule-taint",
        ),
        pytest.param(
            _big_node(taints=[EDGE_TAINT]),
            {"tolerations": [{"key": "dedicated", "value": "other", "effect": "NoExecute"}]},
            None,
            "small",
            id="noexecute-taint-value-differs",
        ),
        pytest.param(
            _big_node(taints=[EDGE_TAINT]),
            {"tolerations": [{"key": "dedicated", "value": "edge", "effect": "NoExecute"}]},
            None,
            "big",
            id="tolerated-noexecute-taint",
        ),
        pytest.param(
            _big_node(taints=[SOFT_TAINT]),
            {},
            None,
            "small",
            id="prefernoschedule-scores-against",
        ),
        pytest.param(
            _big_node(taints=[SOFT_TAINT]),
            {"tolerations": [{"key": "soft", "operator": "Exists"}]},
            None,
            "big",
            id="prefernoschedule-tolerated",
        ),
        pytest.param(
            _big_node(labels={"disk": "hdd"}),
            {"node_selector": {"disk": "ssd"}},
            None,
            "small",
            id="nodeselector-mismatch",
        ),
        pytest.param(
            _big_node(labels={"zone": "b"}),
            {"affinity": _zone("a")},
            None,
            "small",
            id="required-node-affinity-mismatch",
        ),
        pytest.param(
            _big_node(labels={"zone": "a"}),
            {"affinity": _zone("a")},
            None,
            "big",
            id="required-node-affinity-match",
        ),
        pytest.param(
            _big_node(unschedulable=True),
            {},
            None,
            "small",
            id="cordoned",
        ),
        pytest.param(
            _big_node(unschedulable=True),
            {
                "tolerations": [
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                ]
            },
            None,
            "big",
            id="cordoned-but-tolerated",
        ),
        pytest.param(_big_node(ready=False), {}, None, "small", id="not-ready"),
        pytest.param(
            _big_node(),
            {},
            {"shutting_down": True},
            "small",
            id="agent-reports-shutdown",
        ),
        pytest.param(
            _big_node(),
            {},
            {"gated": True},
            "small",
            id="agent-reports-gate-held",
        ),
        pytest.param(
            node("big", cpu="1", memory="64Gi"),
            {"cpu": "1500m"},
            None,
            "small",
            id="insufficient-cpu",
        ),
        pytest.param(
            _big_node(pods="1"),
            {},
            None,
            "small",
            id="no-pod-slot",
        ),
    ],
)
def test_filters_then_least_allocated(
    big: dict[str, Any], moving: dict[str, Any], usage: dict[str, bool] | None, expected: str
) -> None:
    """The emptiest node wins unless a scheduler filter (or its agent's report) keeps the
    pod away from it; then the next best node that passes every filter wins."""
    state = snapshot(
        big,
        node("small", labels={"zone": "a", "disk": "ssd"}),
        node("src", labels={"zone": "a", "disk": "ssd"}),
        pod("mover", "src", **moving),
        pod("filler", "big"),
        node_usage={"big": _usage("big", **usage)} if usage else None,
    )
    assert _destinations(state, "mover") == [expected]


def test_never_the_node_it_is_evicted_from() -> None:
    """The node the pod leaves is no destination, even when it would score best."""
    state = snapshot(
        node("src", cpu="64", memory="256Gi"), node("other"), pod("mover", "src", cpu="10m")
    )
    assert _destinations(state, "mover") == ["other"]


def test_pods_placed_earlier_take_their_room() -> None:
    """Each placement counts the pods the plan placed before it: the second pod no longer
    fits where the first went, and goes to the next node."""
    state = snapshot(
        node("a", cpu="2"),
        node("b", cpu="1500m"),
        node("src", cpu="8"),
        pod("first", "src", cpu="1500m"),
        pod("second", "src", cpu="1500m"),
    )
    assert _destinations(state, "first", "second") == ["a", "b"]


def test_evicted_pods_free_their_room() -> None:
    """A pod evicted earlier in the plan is gone from its node: a later pod may land there.
    Evictions of one window are in flight together, so each is gone before any replacement
    is placed."""
    state = snapshot(
        node("a", cpu="1"),
        node("b", cpu="1"),
        node("c", cpu="700m"),
        pod("x", "a", cpu="600m"),
        pod("y", "b", cpu="600m"),
    )
    assert _destinations(state, "x", "y", window=1) == ["c", "a"]
    assert _destinations(state, "x", "y", window=2) == ["b", "a"]


def _two_replacements_in_one_window() -> tuple[ClusterSnapshot, list[PlannedEviction]]:
    """Two 500m pods of different owners leaving ``src``, with room for one more on ``big``
    (2 CPU) than on ``small`` (1.5 CPU): which gets ``big`` depends on their order."""
    state = snapshot(
        node("big", cpu="2"),
        node("small", cpu="1500m"),
        node("src"),
        pod("first", "src", cpu="500m", owner=owner_ref("ReplicaSet", "one")),
        pod("second", "src", cpu="500m", owner=owner_ref("ReplicaSet", "two")),
    )
    return state, [_eviction(state, "first"), _eviction(state, "second")]


def test_a_replacement_may_come_before_the_rest_of_its_window() -> None:
    """Replacements of one window are scheduled in any order: the second pod's candidates
    hold the node it gets after the first one's replacement (its destination) and the node
    it would get before it."""
    state, evictions = _two_replacements_in_one_window()
    together = place(state, evictions, window=2).placements
    assert [p.node for p in together] == ["big", "small"]
    assert together[1].candidates == ("big", "small")
    alone = place(state, evictions, window=1).placements
    assert alone[1].candidates == ("small",)


def test_a_replacement_may_come_after_the_rest_of_its_window() -> None:
    """The first pod of a window may be scheduled last: its candidates hold the node it
    gets once the others' replacements took the best one, and the simulation goes on from
    the plan's order (the loads are those of the forward placements)."""
    state, evictions = _two_replacements_in_one_window()
    result = place(state, evictions, window=2)
    assert result.placements[0].candidates == ("big", "small")
    loads = {load.node: load.after["cpu"] for load in result.loads}
    assert loads == {"big": 500, "small": 500, "src": 0}


def test_ties_go_to_the_first_node_by_name() -> None:
    """Equal scores pick the node whose name sorts first (the scheduler picks at random)."""
    state = snapshot(node("n-b"), node("n-a"), node("n-c"), node("src"), pod("mover", "src"))
    assert _destinations(state, "mover") == ["n-a"]


def test_a_node_with_only_a_prefernoschedule_taint_is_still_a_destination() -> None:
    """PreferNoSchedule scores against a node, it never filters it out."""
    state = snapshot(
        node("soft", taints=[SOFT_TAINT]), node("src"), pod("mover", "src"), node("full", pods="0")
    )
    assert _destinations(state, "mover") == ["soft"]


def _emptying(node_name: str) -> TaintChange:
    return emptying_change(node_name, "HighNodeUtilization", "p")


def test_a_plans_emptying_taint_steers_the_replacement_to_another_node() -> None:
    """The plan's taints are on the nodes before its evictions go: a node the plan empties
    behind a PreferNoSchedule taint loses to an untainted one it would otherwise beat."""
    state = snapshot(node("a"), node("b"), node("src"), pod("mover", "src"))
    [eviction] = [_eviction(state, "mover")]
    assert place(state, [eviction]).placements[0].node == "a"
    steered = place(state, [eviction], taints=[_emptying("a")])
    assert steered.placements[0].node == "b"
    assert steered.placements[0].candidates == ("b",)


def test_a_taint_change_never_replaces_a_taint_in_its_slot() -> None:
    """An add where a taint of the same key and effect is already on the node leaves that
    one as it is (the live loop never changes another's); a remove takes the slot off."""
    owned = {"key": "kubelet-companion.io/emptying", "value": "x", "effect": "PreferNoSchedule"}
    state = snapshot(node("a", taints=[owned]), node("b"))
    added = with_taint_changes(state, [_emptying("a"), _emptying("b"), _emptying("gone")])
    assert added.nodes["a"].taints == (owned,)
    assert [t["value"] for t in added.nodes["b"].taints] == ["HighNodeUtilization"]
    removal = replace(_emptying("a"), add=False)
    assert with_taint_changes(state, [removal]).nodes["a"].taints == ()
    assert with_taint_changes(state, []) is state


def test_a_bin_packing_scheduler_picks_the_fullest_node_that_fits() -> None:
    """With MostAllocated (and BalancedAllocation off, as a bin-packing profile has it) the
    replacement goes to the fullest node it fits on; the default profile picks the emptiest."""
    state = snapshot(
        node("empty"),
        node("half"),
        pod("filler", "half", cpu="2", memory="8Gi"),
        node("src"),
        pod("mover", "src"),
    )
    packing = SchedulerProfile(
        weights={k: v for k, v in DEFAULT_WEIGHTS.items() if k != BALANCED},
        fit_strategy=MOST_ALLOCATED,
    )
    [eviction] = [_eviction(state, "mover")]
    assert place(state, [eviction], profile=packing).placements[0].node == "half"
    assert place(state, [eviction]).placements[0].node == "empty"


def test_a_job_pod_is_placed_beside_nodes_without_a_hostname_label() -> None:
    """A pod whose controller has no default spread (a Job) scores every node alike, a
    node without the hostname label included (that node once broke the rankings)."""
    state = snapshot(
        node("a"),
        node("b", labels={"kubernetes.io/hostname": "b"}),
        node("src"),
        pod("job", "src", owner=owner_ref("Job", "batch")),
    )
    assert place(state, [_eviction(state, "job")]).placements[0].candidates == ("a", "b")


def test_a_node_holding_the_pods_image_wins_a_tie() -> None:
    """ImageLocality: of two otherwise equal nodes, the one that already has the pod's image
    (``status.images``) gets the replacement."""
    state = snapshot(
        node("a-plain"),
        node("b-image", images={"app:1": 900 * 2**20}),
        node("src"),
        pod("mover", "src", image="app:1"),
    )
    assert _destinations(state, "mover") == ["b-image"]


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[str]]:
    """A small random cluster: nodes in zones (some without zone or hostname labels, some
    tainted, some holding the pods' image, of mixed sizes and loads), pods of a few
    ReplicaSets; the names of the pods to evict, in order."""
    items: list[dict[str, Any]] = []
    nodes = draw(st.integers(2, 7))
    for index in range(nodes):
        labels = {}
        if draw(st.booleans()) or index == 0:
            labels["kubernetes.io/hostname"] = f"n{index}"
        zone = draw(st.sampled_from(["a", "b", "c", None]))
        if zone is not None:
            labels["topology.kubernetes.io/zone"] = zone
        taints = [SOFT_TAINT] if draw(st.integers(0, 5)) == 0 else []
        images = {"app:1": 300 * 2**20} if draw(st.integers(0, 5)) == 0 else None
        items.append(
            node(
                f"n{index}",
                cpu=draw(st.sampled_from(["2", "4", "8"])),
                memory=draw(st.sampled_from(["4Gi", "16Gi"])),
                pods=draw(st.sampled_from(["4", "110"])),
                labels=labels,
                taints=taints,
                images=images,
            )
        )
    names = []
    for index in range(draw(st.integers(1, 12))):
        owner = draw(st.sampled_from(["web", "api", "db", "batch"]))
        kind = "Job" if owner == "batch" else "ReplicaSet"  # a Job has no default spread
        cpu, memory = draw(st.sampled_from([("100m", "128Mi"), ("500m", "1Gi"), (None, None)]))
        name = f"{owner}-{index}"
        items.append(
            pod(
                name,
                f"n{draw(st.integers(0, nodes - 1))}",
                owner=owner_ref(kind, owner),
                labels={"app": owner},
                cpu=cpu,
                memory=memory,
                deleting=draw(st.integers(0, 7)) == 0,
            )
        )
        names.append(name)
    movers = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    return snapshot(*items), movers


PROFILES = [
    DEFAULT_PROFILE,
    SchedulerProfile(
        weights={k: v for k, v in DEFAULT_WEIGHTS.items() if k != BALANCED},
        fit_strategy=MOST_ALLOCATED,
    ),
    SchedulerProfile(weights={**DEFAULT_WEIGHTS, SPREAD: 0, TAINTS: 5}, fit_weights=(3, 1)),
]


@given(_cluster(), st.sampled_from(PROFILES))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_the_rankings_answer_exactly_what_scoring_every_node_answers(
    cluster: tuple[ClusterSnapshot, list[str]], profile: SchedulerProfile
) -> None:
    """Move after move, the candidates from the rankings equal those of scoring every node
    with every plugin (the reference), on random clusters of zones, taints and loads, and
    under the default profile, bin packing, and other weights."""
    state, movers = cluster
    evictions = [_eviction(state, name) for name in movers]
    fast = place(state, evictions, profile=profile)
    full = place(state, evictions, fast=False, profile=profile)
    assert [p.candidates for p in fast.placements] == [p.candidates for p in full.placements]


@pytest.mark.parametrize(
    ("moving", "blocked", "held", "expected", "note"),
    [
        pytest.param({}, "default/pdb", True, "other", BLOCKED, id="held-by-a-pdb"),
        pytest.param({}, "default/pdb", False, None, REFUSED, id="refused-by-a-pdb"),
        pytest.param({"owner": None}, "", False, None, NOT_RECREATED, id="bare-pod"),
        pytest.param({"phase": "Failed"}, "", False, None, FINISHED_NOTE, id="finished-pod"),
        pytest.param(
            {"owner": owner_ref("DaemonSet", "ds")},
            "",
            False,
            "src",
            DAEMON_POD,
            id="daemonset-pod",
        ),
    ],
)
def test_pods_that_go_nowhere_else(
    moving: dict[str, Any], blocked: str, held: bool, expected: str | None, note: str
) -> None:
    """Held evictions are placed as if their budget let them go, refused ones are not sent
    so go nowhere, bare pods are not recreated, finished pods were replaced already, and
    DaemonSet pods come back on their own node."""
    state = snapshot(node("src"), node("other"), pod("mover", "src", **moving))
    result = place(state, [_eviction(state, "mover", blocked=blocked, held=held)])
    assert (result.placements[0].node, result.placements[0].note) == (expected, note)


def test_an_eviction_an_implicit_budget_holds_is_placed_once_after_the_others() -> None:
    """Held by its workload's implicit budget (no PDB): placed once, after the evictions sent
    at once, as the live loop sends it; every pod that leaves lands exactly once."""
    state = snapshot(
        node("src"),
        node("a"),
        node("b"),
        *(pod(f"web-{i}", "src", cpu="1") for i in range(3)),
    )
    first, second, third = (_eviction(state, f"web-{i}") for i in range(3))
    implicit = replace(second, held=True, implicit_budget="Deployment default/web")
    result = place(state, [first, implicit, third], window=1)
    assert [p.node for p in result.placements] == ["a", "a", "b"]
    assert result.placements[1].note == HELD_BY_IMPLICIT_BUDGET
    pods = {load.node: (load.before["pods"], load.after["pods"]) for load in result.loads}
    assert pods == {"src": (3, 0), "a": (0, 2), "b": (0, 1)}


def test_no_fit_says_why_per_node() -> None:
    """A pod no node takes gets no destination and the scheduler's "0/N nodes" summary."""
    state = snapshot(
        node("a", taints=[GPU_TAINT]),
        node("b", cpu="100m"),
        node("src"),
        pod("mover", "src", cpu="500m"),
    )
    placement = place(state, [_eviction(state, "mover")]).placements[0]
    assert placement.node is None
    assert placement.note == (
        "0/3 nodes are available: 1 insufficient cpu, 1 the node it is evicted from, "
        "1 untolerated taint"
    )


def test_loads_before_and_after() -> None:
    """Per-node requests before the plan and after it (evicted pods gone, placed ones in);
    finished pods count on no node."""
    state = snapshot(
        node("a"),
        node("src"),
        pod("mover", "src", cpu="1", memory="1Gi"),
        pod("done", "src", cpu="2", memory="1Gi", phase="Succeeded"),
    )
    loads = {load.node: load for load in place(state, [_eviction(state, "mover")]).loads}
    assert loads["src"].before == {"cpu": 1000, "memory": 2**30, "pods": 1}
    assert loads["src"].after == {"cpu": 0, "memory": 0, "pods": 0}
    assert loads["a"].after == {"cpu": 1000, "memory": 2**30, "pods": 1}
    assert loads["a"].allocatable == {"cpu": 4000, "memory": 16 * 2**30, "pods": 110}


def test_with_destinations_fills_the_plan_shape() -> None:
    """The plan's JSON carries each eviction's destination, ``null`` where there is none."""
    state = snapshot(
        node("src"), node("other"), pod("mover", "src"), pod("bare", "src", owner=None)
    )
    plan = Plan(evictions=[_eviction(state, "mover"), _eviction(state, "bare")])
    filled = with_destinations(plan, place(state, plan.evictions))
    assert [e["destination"] for e in filled.as_json()["evictions"]] == ["other", None]


def _anti(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]
        }
    }


def _spread(app: str, key: str = "zone", skew: int = 1, when: str = "DoNotSchedule") -> Any:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    }


def _hosts(*names: str, zone: str = "a", **kwargs: Any) -> list[dict[str, Any]]:
    return [
        node(name, labels={"kubernetes.io/hostname": name, "zone": zone}, **kwargs)
        for name in names
    ]


# "a" is the emptiest node (it wins unless a rule keeps the pod away), "b" the next best.
@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [
                *_hosts("a", cpu="8"),
                *_hosts("b", "src"),
                pod("mover", "src", labels={"app": "web"}, affinity=_anti("web")),
                pod("web-on-a", "a", labels={"app": "web"}),
            ],
            "b",
            id="own-anti-affinity-rejects-the-node",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="8"),
                *_hosts("b", "src"),
                pod("mover", "src", labels={"app": "web"}),
                pod("guard-on-a", "a", labels={"app": "guard"}, affinity=_anti("web")),
            ],
            "b",
            id="existing-pods-anti-affinity-rejects-the-newcomer",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="8"),
                *_hosts("a2", zone="a"),
                *_hosts("b", zone="b"),
                *_hosts("src", zone="c"),
                pod("mover", "src", labels={"app": "web"}, affinity=_anti("web", key="zone")),
                pod("web-in-zone-a", "a2", labels={"app": "web"}),
            ],
            "b",
            id="anti-affinity-covers-the-whole-zone",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="16", memory="64Gi"),
                *_hosts("b", "src"),
                pod("mover", "src", labels={"app": "web"}, affinity=_anti("web")),
                pod("other-on-a", "a", labels={"app": "db"}, owner=owner_ref("ReplicaSet", "db")),
                pod(
                    "web-elsewhere",
                    "a",
                    labels={"app": "web"},
                    namespace="other",
                    owner=owner_ref("ReplicaSet", "other"),
                ),
            ],
            "a",
            id="anti-affinity-other-labels-and-namespace-do-not-count",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="16", memory="64Gi", zone="a"),
                *_hosts("b", zone="b"),
                *_hosts("src", zone="c"),
                pod("mover", "src", labels={"app": "web"}, spec=_spread("web")),
                pod("web-a", "a", labels={"app": "web"}),
            ],
            "b",
            id="spread-do-not-schedule-skew",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="16", memory="64Gi", zone="a"),
                *_hosts("b", zone="b"),
                *_hosts("src", zone="c"),
                pod(
                    "mover",
                    "src",
                    labels={"app": "web"},
                    spec=_spread("web", when="ScheduleAnyway"),
                ),
                pod("web-a", "a", labels={"app": "web"}),
            ],
            "b",
            id="spread-schedule-anyway-scores-against",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="16", memory="64Gi", zone="a"),
                *_hosts("b", zone="b", pods="1"),
                *_hosts("src", zone="c"),
                pod(
                    "mover",
                    "src",
                    labels={"app": "web"},
                    spec=_spread("web", when="ScheduleAnyway"),
                ),
                pod("web-a", "a", labels={"app": "web"}),
                pod("full-b", "b", owner=owner_ref("ReplicaSet", "other")),
            ],
            "a",
            id="spread-schedule-anyway-never-filters",
        ),
        pytest.param(
            [
                node("a", cpu="8"),
                *_hosts("b", zone="b"),
                *_hosts("src", zone="c"),
                pod("mover", "src", labels={"app": "web"}, spec=_spread("web")),
            ],
            "b",
            id="spread-node-without-the-key",
        ),
    ],
)
def test_inter_pod_rules(items: list[dict[str, Any]], expected: str) -> None:
    """Required anti-affinity (the pod's own terms and existing pods' terms, over the whole
    topology domain) and DoNotSchedule spread keep the pod off the node that scores best."""
    assert _destinations(snapshot(*items), "mover") == [expected]


def test_pods_placed_earlier_count_for_anti_affinity() -> None:
    """Two replicas that must not share a node, evicted one after the other, land on two
    different nodes: the first's replacement counts against the second."""
    state = snapshot(
        *_hosts("a", "b", "src", cpu="8"),
        *[pod(f"web-{i}", "src", labels={"app": "web"}, affinity=_anti("web")) for i in range(2)],
    )
    assert _destinations(state, "web-0", "web-1") == ["a", "b"]


def test_pods_placed_earlier_count_for_spread() -> None:
    """Replicas spread over zones with maxSkew 1 alternate between the zones as they land."""
    state = snapshot(
        *_hosts("a1", "a2", zone="a", cpu="16"),
        *_hosts("b1", zone="b"),
        node("src", cpu="16"),  # no zone: it takes no part in the spread
        *[pod(f"web-{i}", "src", labels={"app": "web"}, spec=_spread("web")) for i in range(3)],
    )
    # zone counts (a, b) before each: (0, 0) -> a1 scores best; (1, 0) -> zone a would make
    # skew 2, so b1; (1, 1) -> zone a again, where a2 is the emptier node.
    assert _destinations(state, "web-0", "web-1", "web-2") == ["a1", "b1", "a2"]
