"""RemovePodsViolatingInterPodAntiAffinity: who breaks their anti-affinity, who goes first."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from tests.harness.deschedulerstate import node, pdb, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

ANTI = "RemovePodsViolatingInterPodAntiAffinity"
HOST = "kubernetes.io/hostname"


def anti(app: str, key: str = HOST) -> dict[str, Any]:
    """Required anti-affinity against pods labelled ``app``."""
    term = {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _node(name: str, zone: str = "a") -> dict[str, Any]:
    return node(name, labels={HOST: name, "zone": zone})


def _app(name: str, node_name: str, app: str, **kwargs: Any) -> dict[str, Any]:
    return pod(name, node_name, labels={"app": app}, **kwargs)


def _evicted(args: dict[str, Any] | None, *items: dict[str, Any], **top: Any) -> list[str]:
    plan = run_cycle(policy((ANTI, args), **top), snapshot(*items))
    return [e.name for e in plan.allowed]


NODES = [_node("n1"), _node("n2"), _node("n3", zone="b")]


@pytest.mark.parametrize(
    ("args", "pods", "evicted"),
    [
        pytest.param(
            None,
            [_app("a", "n1", "a", affinity=anti("b")), _app("b", "n1", "b")],
            ["a"],
            id="rejected-pod-on-the-same-node",
        ),
        pytest.param(
            None,
            [_app("a", "n1", "a", affinity=anti("b")), _app("b", "n2", "b")],
            [],
            id="hostname-key-other-node",
        ),
        pytest.param(
            None,
            [_app("a", "n1", "a", affinity=anti("b", "zone")), _app("b", "n2", "b")],
            ["a"],
            id="zone-key-same-zone",
        ),
        pytest.param(
            None,
            [_app("a", "n1", "a", affinity=anti("b", "zone")), _app("b", "n3", "b")],
            [],
            id="zone-key-other-zone",
        ),
        pytest.param(
            None,
            [_app("a", "n1", "a", affinity=anti("b")), _app("b", "n1", "b", namespace="other")],
            [],
            id="rejected-pod-in-another-namespace",
        ),
        pytest.param(
            None,
            [
                _app("a", "n1", "a", affinity=anti("b")),
                _app("b", "n1", "b", phase="Succeeded"),
            ],
            [],
            id="finished-pods-do-not-count",
        ),
        pytest.param(
            None,
            [
                _app("a", "n1", "a", affinity=anti("b"), priority=10),
                _app("b", "n1", "b", affinity=anti("a"), priority=0),
            ],
            ["b"],
            id="mutual-lowest-priority-goes-and-the-other-stays",
        ),
        pytest.param(
            None,
            [
                _app("a", "n1", "a", affinity=anti("b"), priority=0),
                _app("b", "n1", "b", affinity=anti("a"), priority=10),
            ],
            ["a"],
            id="mutual-other-priorities",
        ),
        pytest.param(
            None,
            [
                _app("a", "n1", "a", affinity=anti("b"), owner=owner_ref("DaemonSet", "ds")),
                _app("b", "n1", "b"),
            ],
            [],
            id="evictor-filter-protects-the-violator",
        ),
        pytest.param(
            {"namespaces": {"exclude": ["default"]}},
            [_app("a", "n1", "a", affinity=anti("b")), _app("b", "n1", "b")],
            [],
            id="namespace-excluded",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"app": "a"}}},
            [_app("a", "n1", "a", affinity=anti("b")), _app("b", "n1", "b")],
            [],
            id="label-selector-hides-the-rejected-pod-too",
        ),
        pytest.param(
            {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
            [_app("a", "n1", "a", affinity=anti("b")), _app("b", "n1", "b")],
            ["a"],
            id="label-selector-keeps-both",
        ),
    ],
)
def test_violations(
    args: dict[str, Any] | None, pods: list[dict[str, Any]], evicted: list[str]
) -> None:
    """A pod goes when a pod its required anti-affinity rejects runs in its domain."""
    assert _evicted(args, *NODES, *pods) == evicted


def test_a_pdb_held_pod_counts_as_gone() -> None:
    """A pod its PDB refuses now is held: it counts as going, so the pod it rejects stays."""
    items = [
        *NODES,
        _app("a", "n1", "a", affinity=anti("b"), priority=0),
        _app("b", "n1", "b", affinity=anti("a"), priority=10),
        pdb("keep-a", match_labels={"app": "a"}),
    ]
    plan = run_cycle(policy((ANTI, None)), snapshot(*items))
    assert [(e.name, e.blocked_by_pdb) for e in plan.evictions] == [("a", "default/keep-a")]


def test_node_fit_keeps_pods_with_nowhere_to_go() -> None:
    """With DefaultEvictor's nodeFit, a violator no other node can take stays: the only other
    node runs a pod its anti-affinity rejects too."""
    items = [
        _node("n1"),
        _node("n2"),
        _app("a", "n1", "a", affinity=anti("b")),
        _app("b", "n1", "b"),
        _app("b2", "n2", "b"),
    ]
    assert _evicted(None, *items) == ["a"]
    plan = run_cycle(policy((ANTI, None), evictor_args={"nodeFit": True}), snapshot(*items))
    assert plan.allowed == []


def test_node_limit_moves_on_to_the_next_node() -> None:
    """Past the per-node limit the next node's violators are still evicted."""
    items = [
        *NODES,
        _app("a1", "n1", "a", affinity=anti("b")),
        _app("a2", "n1", "a", affinity=anti("b")),
        _app("b1", "n1", "b"),
        _app("a3", "n2", "a", affinity=anti("b")),
        _app("b2", "n2", "b"),
    ]
    assert _evicted(None, *items, maxNoOfPodsToEvictPerNode=1) == ["a1", "a3"]
