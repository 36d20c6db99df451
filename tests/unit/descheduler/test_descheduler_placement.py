"""Placement: where an evicted pod lands, as a default kube-scheduler would pick (filter, then
LeastAllocated, ties by name), with the pods the plan placed earlier counted."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agent.descheduler.model import ClusterSnapshot, NodeUsage
from agent.descheduler.placement import (
    BLOCKED,
    DAEMON_POD,
    FINISHED_NOTE,
    NOT_RECREATED,
    Simulation,
    place,
    score,
    with_destinations,
)
from agent.descheduler.plan import Plan, PlannedEviction
from tests.harness.deschedulerstate import node, pod, snapshot

GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
EDGE_TAINT = {"key": "dedicated", "value": "edge", "effect": "NoExecute"}
SOFT_TAINT = {"key": "soft", "effect": "PreferNoSchedule"}


def _eviction(state: ClusterSnapshot, name: str, *, blocked: str = "") -> PlannedEviction:
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
    )


def _destinations(state: ClusterSnapshot, *names: str) -> list[str | None]:
    result = place(state, [_eviction(state, name) for name in names])
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


# An empty big node ("big") wins LeastAllocated whenever the filters let the pod go there;
# "small" is the fallback, "src" is where the evicted pod runs.
@pytest.mark.parametrize(
    ("big", "moving", "usage", "expected"),
    [
        pytest.param(node("big", cpu="16", memory="64Gi"), {}, None, "big", id="emptiest-wins"),
        pytest.param(
            node("big", cpu="16", memory="64Gi", taints=[GPU_TAINT]),
            {},
            None,
            "small",
            id="untolerated-noschedule-taint",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", taints=[GPU_TAINT]),
            {"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            None,
            "big",
            id="tolerated-noschedule-taint",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", taints=[EDGE_TAINT]),
            {"tolerations": [{"key": "dedicated", "value": "other", "effect": "NoExecute"}]},
            None,
            "small",
            id="noexecute-taint-value-differs",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", taints=[EDGE_TAINT]),
            {"tolerations": [{"key": "dedicated", "value": "edge", "effect": "NoExecute"}]},
            None,
            "big",
            id="tolerated-noexecute-taint",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", taints=[SOFT_TAINT]),
            {},
            None,
            "big",
            id="prefernoschedule-never-filters",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", labels={"disk": "hdd"}),
            {"node_selector": {"disk": "ssd"}},
            None,
            "small",
            id="nodeselector-mismatch",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", labels={"zone": "b"}),
            {"affinity": _zone("a")},
            None,
            "small",
            id="required-node-affinity-mismatch",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", labels={"zone": "a"}),
            {"affinity": _zone("a")},
            None,
            "big",
            id="required-node-affinity-match",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", unschedulable=True),
            {},
            None,
            "small",
            id="cordoned",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", unschedulable=True),
            {
                "tolerations": [
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                ]
            },
            None,
            "big",
            id="cordoned-but-tolerated",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi", ready=False), {}, None, "small", id="not-ready"
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi"),
            {},
            {"shutting_down": True},
            "small",
            id="agent-reports-shutdown",
        ),
        pytest.param(
            node("big", cpu="16", memory="64Gi"),
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
            node("big", cpu="16", memory="64Gi", pods="1"),
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
    """A pod evicted earlier in the plan is gone from its node: a later pod may land there."""
    state = snapshot(
        node("a", cpu="1"),
        node("b", cpu="1"),
        node("c", cpu="700m"),
        pod("x", "a", cpu="600m"),
        pod("y", "b", cpu="600m"),
    )
    assert _destinations(state, "x", "y") == ["c", "a"]


def test_ties_go_to_the_first_node_by_name() -> None:
    """Equal scores pick the node whose name sorts first (the scheduler picks at random)."""
    state = snapshot(node("n-b"), node("n-a"), node("n-c"), node("src"), pod("mover", "src"))
    assert _destinations(state, "mover") == ["n-a"]


@pytest.mark.parametrize(
    ("requests", "used", "expected"),
    [
        # cpu (4000 - 1000 - 1000) * 100 // 4000 = 50, memory (16 - 4 - 4) * 100 // 16 = 50.
        pytest.param(("1", "4Gi"), ("1", "4Gi"), 50, id="both-resources-halfway"),
        # Both pods count 100m and 200Mi: cpu (4000 - 200) * 100 // 4000 = 95, memory
        # (16384Mi - 400Mi) * 100 // 16384Mi = 97; (95 + 97) // 2 = 96.
        pytest.param((None, None), (None, None), 96, id="nonzero-defaults"),
        # cpu 6000m > 4000m scores 0, memory (16 - 2) * 100 // 16 = 87; (0 + 87) // 2 = 43.
        pytest.param(("5", "1Gi"), ("1", "1Gi"), 43, id="over-allocatable-scores-zero"),
    ],
)
def test_least_allocated_score(
    requests: tuple[str | None, str | None], used: tuple[str | None, str | None], expected: int
) -> None:
    """LeastAllocated: ``(allocatable - requested) * 100 // allocatable`` per resource with
    the pod added, averaged; pods asking nothing count 100m and 200Mi; over 100% scores 0."""
    state = snapshot(
        node("n"),
        pod("running", "n", cpu=used[0], memory=used[1]),
        pod("new", "elsewhere", cpu=requests[0], memory=requests[1]),
    )
    simulation = Simulation(state)
    new = state.pods_on("elsewhere")[0]
    assert score(simulation.nodes[0], new) == expected


def test_ranked_pick_equals_scoring_every_node() -> None:
    """The ranking per pod size picks exactly what scoring every node would, move after move,
    on a cluster of mixed sizes and loads."""
    sizes = itertools.cycle([("100m", "128Mi"), ("700m", "1Gi"), ("250m", "3Gi"), (None, None)])
    items: list[dict[str, Any]] = []
    for index in range(12):
        items.append(node(f"n{index:02}", cpu=str(2 + index % 3), memory=f"{8 + index % 4}Gi"))
        for slot in range(index % 4):
            cpu, memory = next(sizes)
            items.append(pod(f"p{index:02}-{slot}", f"n{index:02}", cpu=cpu, memory=memory))
    state = snapshot(*items)
    movers = [p for pods in state.pods_by_node.values() for p in pods]
    expected: list[str | None] = []
    brute = Simulation(state)
    for mover in movers:
        brute.evict(mover)
        candidates = [
            (-score(n, mover), n.info.name)
            for n in brute.nodes
            if n.info.name != mover.node_name and n.pods + 1 <= n.alloc_pods
            if all(
                amount <= 0
                or amount
                <= {"cpu": n.alloc_cpu - n.cpu, "memory": n.alloc_memory - n.memory}.get(
                    name, 1 << 62
                )
                for name, amount in mover.requests.items()
                if name != "pods"
            )
        ]
        winner = min(candidates)[1] if candidates else None
        expected.append(winner)
        if winner is not None:
            brute.land(mover, winner)
    assert _destinations(state, *(m.name for m in movers)) == expected


@pytest.mark.parametrize(
    ("moving", "blocked", "expected", "note"),
    [
        pytest.param({}, "default/pdb", None, BLOCKED, id="blocked-by-pdb"),
        pytest.param({"owner": None}, "", None, NOT_RECREATED, id="bare-pod"),
        pytest.param({"phase": "Failed"}, "", None, FINISHED_NOTE, id="finished-pod"),
        pytest.param({"owner": ("DaemonSet", "ds")}, "", "src", DAEMON_POD, id="daemonset-pod"),
    ],
)
def test_pods_that_go_nowhere_else(
    moving: dict[str, Any], blocked: str, expected: str | None, note: str
) -> None:
    """Blocked evictions move nothing, bare pods are not recreated, finished pods were
    replaced already, and DaemonSet pods come back on their own node."""
    state = snapshot(node("src"), node("other"), pod("mover", "src", **moving))
    result = place(state, [_eviction(state, "mover", blocked=blocked)])
    assert (result.placements[0].node, result.placements[0].note) == (expected, note)


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
                pod("other-on-a", "a", labels={"app": "db"}),
                pod("web-elsewhere", "a", labels={"app": "web"}, namespace="other"),
            ],
            "a",
            id="anti-affinity-other-labels-and-namespace-do-not-count",
        ),
        pytest.param(
            [
                *_hosts("a", cpu="16", memory="64Gi", zone="a"),
                *_hosts("b", zone="b"),
                *_hosts("src", zone="c"),
                pod("mover", "src", labels={"app": "web"}, extra_spec=_spread("web")),
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
                    extra_spec=_spread("web", when="ScheduleAnyway"),
                ),
                pod("web-a", "a", labels={"app": "web"}),
            ],
            "a",
            id="spread-schedule-anyway-never-filters",
        ),
        pytest.param(
            [
                node("a", cpu="8"),
                *_hosts("b", zone="b"),
                *_hosts("src", zone="c"),
                pod("mover", "src", labels={"app": "web"}, extra_spec=_spread("web")),
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
        *[
            pod(f"web-{i}", "src", labels={"app": "web"}, extra_spec=_spread("web"))
            for i in range(3)
        ],
    )
    # zone counts (a, b) before each: (0, 0) -> a1 scores best; (1, 0) -> zone a would make
    # skew 2, so b1; (1, 1) -> zone a again, where a2 is the emptier node.
    assert _destinations(state, "web-0", "web-1", "web-2") == ["a1", "b1", "a2"]
