"""RemoveDuplicates: owner plus sorted images, feasible nodes, ``ceil(count / feasibleNodes)``."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from tests.harness.deschedulerstate import node, pod, policy, snapshot
from tests.harness.kubeobjects import container, owner_ref

DUP = "RemoveDuplicates"


def _evicted(args: dict[str, Any] | None, *items: dict[str, Any]) -> list[str]:
    return [e.name for e in run_cycle(policy((DUP, args)), snapshot(*items)).allowed]


def _replicas(node_name: str, count: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [pod(f"{node_name}-{i}", node_name, **kwargs) for i in range(count)]


TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("args", "items", "evicted"),
    [
        pytest.param(
            None, [node("n1"), node("n2"), *_replicas("n1", 3)], ["n1-2"], id="three-on-one-of-two"
        ),
        pytest.param(
            None,
            [node("n1"), node("n2"), node("n3"), *_replicas("n1", 4), *_replicas("n2", 2)],
            ["n1-2", "n1-3"],
            id="ceil-of-six-over-three",
        ),
        pytest.param(
            None,
            [node("n1"), node("n2"), *_replicas("n1", 1), *_replicas("n2", 1)],
            [],
            id="spread",
        ),
        pytest.param(
            None,
            [
                node("n1"),
                node("n2"),
                pod("a", "n1", image="x:1"),
                pod("b", "n1", image="y:1"),
            ],
            [],
            id="different-images-are-not-duplicates",
        ),
        pytest.param(
            None,
            [
                node("n1"),
                node("n2"),
                pod(
                    "a",
                    "n1",
                    containers=[
                        container("c0", "y:1", cpu="100m", memory="256Mi"),
                        container("c1", "x:1", cpu="100m", memory="256Mi"),
                    ],
                ),
                pod(
                    "b",
                    "n1",
                    containers=[
                        container("c0", "x:1", cpu="100m", memory="256Mi"),
                        container("c1", "y:1", cpu="100m", memory="256Mi"),
                    ],
                ),
            ],
            ["b"],
            id="images-compared-sorted",
        ),
        pytest.param(
            None,
            [
                node("n1"),
                node("n2"),
                *_replicas("n1", 2, owner=owner_ref("ReplicaSet", "a")),
                pod("x", "n1", owner=owner_ref("ReplicaSet", "b")),
            ],
            ["n1-1"],
            id="per-owner",
        ),
        pytest.param(
            {"excludeOwnerKinds": ["ReplicaSet"]},
            [node("n1"), node("n2"), *_replicas("n1", 3)],
            [],
            id="exclude-owner-kinds",
        ),
        pytest.param(
            {"namespaces": {"exclude": ["default"]}},
            [node("n1"), node("n2"), *_replicas("n1", 3)],
            [],
            id="namespaces-exclude",
        ),
        pytest.param(
            {"namespaces": {"include": ["other"]}},
            [node("n1"), node("n2"), *_replicas("n1", 3)],
            [],
            id="namespaces-include",
        ),
        pytest.param(
            None,
            [node("n1"), node("n2", taints=[TAINT]), *_replicas("n1", 3)],
            [],
            id="one-feasible-node",
        ),
        pytest.param(
            None,
            [
                node("n1", labels={"disk": "ssd"}),
                node("n2"),
                *_replicas("n1", 3, node_selector={"disk": "ssd"}),
            ],
            [],
            id="node-selector-leaves-one-feasible-node",
        ),
        pytest.param(
            None,
            [node("n1"), node("n2"), node("n3", taints=[TAINT]), *_replicas("n1", 4)],
            ["n1-2", "n1-3"],
            id="only-feasible-nodes-count",
        ),
        pytest.param(
            None,
            [node("n1"), node("n2"), *_replicas("n1", 3, owner=None)],
            [],
            id="bare-pods-ignored",
        ),
        pytest.param(
            None,
            [node("n1"), node("n2"), *_replicas("n1", 3, phase="Succeeded")],
            [],
            id="finished-pods-ignored",
        ),
    ],
)
def test_remove_duplicates(
    args: dict[str, Any] | None, items: list[dict[str, Any]], evicted: list[str]
) -> None:
    """Each node keeps ``ceil(count / feasible nodes)`` pods of an owner+images key."""
    assert _evicted(args, *items) == evicted


def test_node_limit_moves_to_the_next_node() -> None:
    """A per-node limit stops this node's evictions; other nodes still shed theirs."""
    items = [
        node("n1"),
        node("n2"),
        node("n3"),
        node("n4"),
        *_replicas("n1", 4),
        *_replicas("n2", 4),
    ]
    plan = run_cycle(policy((DUP, None), maxNoOfPodsToEvictPerNode=1), snapshot(*items))
    assert [(e.node, e.name) for e in plan.allowed] == [("n1", "n1-2"), ("n2", "n2-2")]


def test_pod_with_two_owners_is_evicted_once() -> None:
    """A pod that is a duplicate under two owners is planned once, not twice."""
    two_owners = {
        "ownerReferences": [
            {"kind": "ReplicaSet", "name": "a", "uid": "ua", "controller": True},
            {"kind": "Custom", "name": "b", "uid": "ub"},
        ]
    }
    pods = []
    for i in range(3):
        raw = pod(f"p{i}", "n1")
        raw["metadata"].update(two_owners)
        pods.append(raw)
    plan = run_cycle(policy((DUP, None)), snapshot(node("n1"), node("n2"), *pods))
    assert [e.name for e in plan.evictions] == ["p2"]


def test_feasible_nodes_are_the_union_over_the_placements() -> None:
    """Duplicates of one owner with two placements count the nodes either placement fits."""
    zones = [node(name, labels={"zone": zone}) for name, zone in (("n1", "a"), ("n2", "a"))]
    zones += [node(name, labels={"zone": zone}) for name, zone in (("n3", "b"), ("n4", "b"))]
    pods = [pod(f"p{i}", "n1", node_selector={"zone": "ab"[i // 2]}) for i in range(4)]
    # 4 pods over 4 feasible nodes: one may stay on n1 (with only zone a's 2 nodes, two would).
    assert _evicted(None, *zones, *pods) == ["p1", "p2", "p3"]
