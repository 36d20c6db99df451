"""Topology spread constraints on the model: selectors, node inclusion, domain counts."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.cache.projection import project_node, project_pod
from agent.descheduler.core.rules.podindex import PodIndex
from agent.descheduler.core.rules.topology import (
    domain_counts,
    raw_spread_constraints,
    scheduler_spread_counts,
    skew,
    spread_constraint,
    spread_rejection,
)
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from tests.harness.deschedulerstate import node, pod

TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


def _constraint(**fields: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **fields,
    }


def _pod(name: str, node_name: str, **kwargs: Any) -> PodInfo:
    kwargs.setdefault("labels", {"app": "web"})
    return project_pod(pod(name, node_name, **kwargs))


def _nodes(*raw: dict[str, Any]) -> dict[str, NodeInfo]:
    return {n.name: n for n in (project_node(item) for item in raw)}


def test_raw_constraints_come_from_extra() -> None:
    """The projected pod hands back its constraints as sent; a plain pod has none."""
    spread = _pod("a", "n1", spec={"topologySpreadConstraints": [_constraint()]})
    assert raw_spread_constraints(spread) == (_constraint(),)
    assert raw_spread_constraints(_pod("b", "n1")) == ()


@pytest.mark.parametrize(
    ("fields", "owner_labels", "other_labels", "selected"),
    [
        pytest.param({}, {"app": "web"}, {"app": "web"}, True, id="selector-matches"),
        pytest.param({}, {"app": "web"}, {"app": "db"}, False, id="selector-differs"),
        pytest.param(
            {"matchLabelKeys": ["hash"]},
            {"app": "web", "hash": "1"},
            {"app": "web", "hash": "2"},
            False,
            id="match-label-keys-narrow",
        ),
        pytest.param(
            {"matchLabelKeys": ["hash"]},
            {"app": "web", "hash": "1"},
            {"app": "web", "hash": "1"},
            True,
            id="match-label-keys-same-value",
        ),
        pytest.param(
            {"matchLabelKeys": ["hash"]},
            {"app": "web"},
            {"app": "web", "hash": "2"},
            True,
            id="match-label-key-the-owner-lacks-is-ignored",
        ),
        pytest.param(
            {"labelSelector": None}, {"app": "web"}, {"app": "web"}, False, id="no-selector"
        ),
    ],
)
def test_selector_with_match_label_keys(
    fields: dict[str, Any],
    owner_labels: dict[str, str],
    other_labels: dict[str, str],
    selected: bool,
) -> None:
    """``matchLabelKeys`` adds the owner's values of those keys to the selector."""
    owner = _pod("owner", "n1", labels=owner_labels)
    constraint = spread_constraint(_constraint(**fields), owner)
    assert constraint.selects(_pod("other", "n1", labels=other_labels)) is selected


def test_other_namespaces_never_count() -> None:
    """A constraint counts only pods of its owner's namespace."""
    constraint = spread_constraint(_constraint(), _pod("owner", "n1"))
    assert not constraint.selects(_pod("other", "n1", namespace="elsewhere"))


@pytest.mark.parametrize(
    ("fields", "owner", "raw_node", "included"),
    [
        pytest.param({}, {}, node("n", labels={"zone": "a"}), True, id="plain-node"),
        pytest.param(
            {},
            {"node_selector": {"disk": "ssd"}},
            node("n", labels={"zone": "a"}),
            False,
            id="affinity-honored-by-default",
        ),
        pytest.param(
            {"nodeAffinityPolicy": "Ignore"},
            {"node_selector": {"disk": "ssd"}},
            node("n", labels={"zone": "a"}),
            True,
            id="affinity-ignored",
        ),
        pytest.param(
            {},
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["b"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            node("n", labels={"zone": "a"}),
            False,
            id="required-affinity-honored",
        ),
        pytest.param(
            {},
            {},
            node("n", labels={"zone": "a"}, taints=[TAINT]),
            True,
            id="taints-ignored-by-default",
        ),
        pytest.param(
            {"nodeTaintsPolicy": "Honor"},
            {},
            node("n", labels={"zone": "a"}, taints=[TAINT]),
            False,
            id="taints-honored",
        ),
        pytest.param(
            {"nodeTaintsPolicy": "Honor"},
            {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
            node("n", labels={"zone": "a"}, taints=[TAINT]),
            True,
            id="taints-honored-and-tolerated",
        ),
    ],
)
def test_node_inclusion_policies(
    fields: dict[str, Any], owner: dict[str, Any], raw_node: dict[str, Any], included: bool
) -> None:
    """``nodeAffinityPolicy`` (Honor by default) and ``nodeTaintsPolicy`` (Ignore by default)
    decide which nodes form domains."""
    constraint = spread_constraint(_constraint(**fields), _pod("owner", "x", **owner))
    assert constraint.includes(project_node(raw_node)) is included


def test_domain_counts_include_empty_domains_and_skip_terminating_pods() -> None:
    """Every included domain is counted, empty ones as 0; terminating pods and pods on nodes
    outside the map do not count."""
    nodes = _nodes(
        node("n1", labels={"zone": "a"}),
        node("n2", labels={"zone": "b"}),
        node("n3", labels={"zone": "c"}),
        node("n4"),
    )
    pods = [
        _pod("a1", "n1"),
        _pod("a2", "n1"),
        _pod("a3", "n1", deleting=True),
        _pod("b1", "n2"),
        _pod("x", "n4"),
        _pod("y", "gone"),
    ]
    constraint = spread_constraint(_constraint(), pods[0])
    counts = domain_counts(constraint, nodes, pods)
    assert counts == {"a": 2, "b": 1, "c": 0}
    assert skew(counts) == 2


def test_equal_constraints_of_different_pods_are_one() -> None:
    """Replicas carrying the same constraint give equal constraints (counted once)."""
    first = spread_constraint(_constraint(), _pod("a", "n1"))
    second = spread_constraint(_constraint(), _pod("b", "n2"))
    assert first == second


def _in_place(*pods: PodInfo) -> PodIndex:
    """The pods in place on ``ZONE_NODES``, indexed as the placement holds them."""
    return PodIndex(ZONE_NODES, pods)


ZONE_NODES = _nodes(
    node("n1", labels={"zone": "a"}),
    node("n2", labels={"zone": "b"}),
    node("n3", labels={"zone": "b"}),
    node("bare"),
)


@pytest.mark.parametrize(
    ("placed", "target", "fields", "rejected"),
    [
        pytest.param(["n1"], "n1", {}, True, id="one-ahead-would-be-two"),
        pytest.param(["n1"], "n2", {}, False, id="the-empty-zone"),
        pytest.param(["n1", "n2"], "n3", {}, False, id="balanced-either-way"),
        pytest.param(["n1"], "n1", {"maxSkew": 2}, False, id="max-skew-two"),
        pytest.param([], "bare", {}, True, id="node-without-the-key"),
        pytest.param(
            ["n1"], "n1", {"whenUnsatisfiable": "ScheduleAnyway"}, False, id="schedule-anyway"
        ),
    ],
)
def test_scheduler_spread_filter(
    placed: list[str], target: str, fields: dict[str, Any], rejected: bool
) -> None:
    """kube-scheduler's PodTopologySpread filter: count + self - least must stay <= maxSkew."""
    spec = {"topologySpreadConstraints": [_constraint(**fields)]}
    pods = [_pod(f"p{i}", where, spec=spec) for i, where in enumerate(placed)]
    moving = _pod("moving", "n9", spec=spec)
    counted = scheduler_spread_counts(moving, ZONE_NODES.values(), _in_place(*pods))
    assert (spread_rejection(counted, ZONE_NODES[target]) is not None) is rejected


def test_scheduler_spread_counts_skip_terminating_and_finished_pods() -> None:
    """Terminating and finished pods do not count toward a domain."""
    spec = {"topologySpreadConstraints": [_constraint()]}
    pods = [
        _pod("gone", "n1", spec=spec, deleting=True),
        _pod("done", "n1", spec=spec, phase="Succeeded"),
    ]
    counted = scheduler_spread_counts(
        _pod("moving", "n9", spec=spec), ZONE_NODES.values(), _in_place(*pods)
    )
    assert [dict(c.counts) for c in counted] == [{"a": 0, "b": 0}]
