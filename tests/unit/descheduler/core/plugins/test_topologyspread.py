"""RemovePodsViolatingTopologySpreadConstraint: the fewest moves that bring skew within bounds."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from tests.harness.deschedulerstate import node, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

SPREAD = "RemovePodsViolatingTopologySpreadConstraint"
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


def constraint(max_skew: int = 1, **fields: Any) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **fields,
    }


def web(name: str, node_name: str, *constraints: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A pod labelled app=web carrying ``constraints`` (one default constraint if none)."""
    kwargs.setdefault("labels", {"app": "web"})
    spread = list(constraints) or [constraint()]
    return pod(name, node_name, spec={"topologySpreadConstraints": spread}, **kwargs)


def zones(*names: str, **kwargs: Any) -> list[dict[str, Any]]:
    """One node per zone: ``n-a`` in zone a, ``n-b`` in zone b, ..."""
    return [node(f"n-{z}", labels={"zone": z, "pool": "x"}, **kwargs) for z in names]


def _evicted(args: dict[str, Any] | None, *items: dict[str, Any], **top: Any) -> list[str]:
    plan = run_cycle(policy((SPREAD, args), **top), snapshot(*items))
    return sorted(e.name for e in plan.allowed)


@pytest.mark.parametrize(
    ("args", "items", "evicted"),
    [
        pytest.param(
            None,
            [*zones("a", "b"), web("w0", "n-a"), web("w1", "n-a"), web("w2", "n-b")],
            [],
            id="within-max-skew",
        ),
        pytest.param(
            None,
            [*zones("a", "b"), *(web(f"w{i}", "n-a") for i in range(3))],
            ["w2"],
            id="three-to-nothing-moves-one",
        ),
        pytest.param(
            None,
            [*zones("a", "b", "c"), *(web(f"w{i}", "n-a") for i in range(4))],
            ["w1", "w2", "w3"],
            id="four-over-three-zones-moves-three",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(web(f"w{i}", "n-a", constraint(max_skew=2)) for i in range(3)),
            ],
            ["w2"],
            id="max-skew-two",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(web(f"w{i}", "n-a", constraint(max_skew=3)) for i in range(3)),
            ],
            [],
            id="max-skew-three-is-satisfied",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(
                    web(f"w{i}", "n-a", constraint(whenUnsatisfiable="ScheduleAnyway"))
                    for i in range(3)
                ),
            ],
            [],
            id="schedule-anyway-ignored-by-default",
        ),
        pytest.param(
            {"constraints": ["ScheduleAnyway"]},
            [
                *zones("a", "b"),
                *(
                    web(f"w{i}", "n-a", constraint(whenUnsatisfiable="ScheduleAnyway"))
                    for i in range(3)
                ),
            ],
            ["w2"],
            id="schedule-anyway-when-listed",
        ),
        pytest.param(
            {"constraints": ["ScheduleAnyway"]},
            [*zones("a", "b"), *(web(f"w{i}", "n-a") for i in range(3))],
            [],
            id="do-not-schedule-ignored-when-not-listed",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(web(f"w{i}", "n-a") for i in range(3)),
                *(pod(f"db{i}", "n-b", labels={"app": "db"}) for i in range(3)),
            ],
            ["w2"],
            id="pods-the-selector-does-not-pick-do-not-count",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(web(f"w{i}", "n-a") for i in range(3)),
                *(pod(f"o{i}", "n-b", namespace="other", labels={"app": "web"}) for i in range(3)),
            ],
            ["w2"],
            id="other-namespaces-do-not-count",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(web(f"w{i}", "n-a", deleting=True) for i in range(2)),
                web("w2", "n-a"),
            ],
            [],
            id="terminating-pods-do-not-count",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                *(web(f"w{i}", "n-a", owner=owner_ref("DaemonSet", "ds")) for i in range(2)),
                web("w2", "n-a"),
            ],
            [],
            id="pods-the-evictor-refuses-do-not-count",
        ),
        pytest.param(
            {"namespaces": {"exclude": ["default"]}},
            [*zones("a", "b"), *(web(f"w{i}", "n-a") for i in range(3))],
            [],
            id="namespace-excluded",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"tier": "front"}}},
            [
                *zones("a", "b"),
                web("w0", "n-a", labels={"app": "web", "tier": "front"}),
                *(web(f"w{i}", "n-a") for i in range(1, 3)),
            ],
            [],
            id="label-selector-narrows-the-count",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                web(
                    "w0",
                    "n-a",
                    constraint(matchLabelKeys=["hash"]),
                    labels={"app": "web", "hash": "1"},
                ),
                web(
                    "w1",
                    "n-a",
                    constraint(matchLabelKeys=["hash"]),
                    labels={"app": "web", "hash": "2"},
                ),
            ],
            [],
            id="match-label-keys-split-the-count",
        ),
        pytest.param(
            None,
            [
                *zones("a", "b"),
                web("w0", "n-a", labels={"app": "web", "hash": "1"}),
                web("w1", "n-a", labels={"app": "web", "hash": "2"}),
            ],
            ["w1"],
            id="without-match-label-keys-one-count",
        ),
    ],
)
def test_balancing(
    args: dict[str, Any] | None, items: list[dict[str, Any]], evicted: list[str]
) -> None:
    """Domains further apart than maxSkew lose the fewest pods upstream's balanceDomains picks."""
    assert _evicted(args, *items) == evicted


def test_highest_priority_pod_without_placement_rules_goes_first() -> None:
    """From an over-full domain the pod taken is the highest-priority one without a nodeSelector
    or node affinity (v0.36's order), not the lowest."""
    items = [
        *zones("a", "b"),
        web("low", "n-a", priority=0),
        web("high", "n-a", priority=100),
        web("pinned", "n-a", priority=1000, node_selector={"pool": "x"}),
    ]
    assert _evicted(None, *items) == ["high"]


@pytest.mark.parametrize(
    ("fields", "args", "tainted", "evicted"),
    [
        pytest.param({}, None, True, [], id="node-fit-tainted-target"),
        pytest.param({}, {"topologyBalanceNodeFit": False}, True, ["w2"], id="no-node-fit"),
        pytest.param(
            {"nodeTaintsPolicy": "Honor"},
            {"topologyBalanceNodeFit": False},
            True,
            [],
            id="taints-honored-drop-the-domain",
        ),
        pytest.param({}, None, False, ["w2"], id="untainted-target"),
    ],
)
def test_node_fit_and_taints_policy(
    fields: dict[str, Any], args: dict[str, Any] | None, tainted: bool, evicted: list[str]
) -> None:
    """``topologyBalanceNodeFit`` keeps pods that fit no node below the average;
    ``nodeTaintsPolicy: Honor`` leaves a tainted node out of the domains altogether."""
    items = [
        node("n-a", labels={"zone": "a"}),
        node("n-b", labels={"zone": "b"}, taints=[TAINT] if tainted else []),
        *(web(f"w{i}", "n-a", constraint(**fields)) for i in range(3)),
    ]
    assert _evicted(args, *items) == evicted


@pytest.mark.parametrize(
    ("fields", "evicted"),
    [
        pytest.param({}, [], id="affinity-honored-by-default-drops-the-domain"),
        pytest.param({"nodeAffinityPolicy": "Ignore"}, ["w1"], id="affinity-ignored"),
    ],
)
def test_node_affinity_policy(fields: dict[str, Any], evicted: list[str]) -> None:
    """Under ``nodeAffinityPolicy: Honor`` a node the pods' nodeSelector excludes forms no
    domain (n-c here, which their selector rejects but the Ignore policy counts)."""
    items = [
        node("n-a", labels={"zone": "a", "pool": "x"}),
        node("n-b", labels={"zone": "b", "pool": "x"}),
        node("n-c", labels={"zone": "c"}),
        *(web(f"w{i}", "n-a", constraint(**fields), node_selector={"pool": "x"}) for i in range(2)),
        web("w2", "n-b", constraint(**fields), node_selector={"pool": "x"}),
    ]
    assert _evicted({"topologyBalanceNodeFit": False}, *items) == evicted


def test_default_evictor_node_fit_applies_before_eviction() -> None:
    """The chosen pod still passes DefaultEvictor's preEvictionFilter (its nodeFit)."""
    items = [
        node("n-a", labels={"zone": "a"}),
        node("n-b", labels={"zone": "b"}, cpu="50m"),
        *(web(f"w{i}", "n-a") for i in range(3)),
    ]
    args = {"topologyBalanceNodeFit": False}
    assert _evicted(args, *items) == ["w2"]
    plan = run_cycle(policy((SPREAD, args), evictor_args={"nodeFit": True}), snapshot(*items))
    assert plan.allowed == []


def test_node_limit_skips_that_nodes_other_pods() -> None:
    """Past the per-node limit, the node's other chosen pods stay (w2 and w3 were chosen
    first, then w1)."""
    items = [*zones("a", "b", "c"), *(web(f"w{i}", "n-a") for i in range(4))]
    assert _evicted(None, *items, maxNoOfPodsToEvictPerNode=1) == ["w2"]


def test_identical_constraints_are_balanced_once() -> None:
    """Replicas carrying the same constraint (twice each) move pods once, not per copy."""
    items = [*zones("a", "b"), *(web(f"w{i}", "n-a", constraint(), constraint()) for i in range(3))]
    plan = run_cycle(policy((SPREAD, None)), snapshot(*items))
    assert [e.name for e in plan.evictions] == ["w2"]


def test_pods_that_fit_below_the_average_are_taken_first() -> None:
    """Of an over-full domain's pods, those that fit a node of a domain below the average go
    before those that do not (here only w0 tolerates the emptier node's taint)."""
    items = [
        node("n-a", labels={"zone": "a"}),
        node("n-b", labels={"zone": "b"}, taints=[TAINT]),
        web("w0", "n-a", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
        web("w1", "n-a"),
        web("w2", "n-a"),
    ]
    assert _evicted(None, *items) == ["w0"]
