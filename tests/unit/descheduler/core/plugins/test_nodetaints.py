"""RemovePodsViolatingNodeTaints: which taints count, which pods go, and the limits."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from tests.harness.deschedulerstate import node, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

TAINTS = "RemovePodsViolatingNodeTaints"


def _taint(key: str = "dedicated", value: str = "x", effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def _evicted(args: dict[str, Any] | None, *items: dict[str, Any], **top: Any) -> list[str]:
    plan = run_cycle(policy((TAINTS, args), **top), snapshot(*items))
    return [e.name for e in plan.allowed]


def _on_tainted(*taints: dict[str, Any], **pod_kwargs: Any) -> list[dict[str, Any]]:
    """n1 with ``taints`` running pod ``p``; n2 plain."""
    return [node("n1", taints=taints), node("n2"), pod("p", "n1", **pod_kwargs)]


@pytest.mark.parametrize(
    ("args", "items", "evicted"),
    [
        pytest.param(None, _on_tainted(_taint()), ["p"], id="untolerated-no-schedule"),
        pytest.param(
            None,
            _on_tainted(_taint(), tolerations=[{"key": "dedicated", "operator": "Exists"}]),
            [],
            id="tolerated",
        ),
        pytest.param(
            None,
            _on_tainted(
                _taint(), tolerations=[{"key": "dedicated", "operator": "Equal", "value": "y"}]
            ),
            ["p"],
            id="toleration-for-another-value",
        ),
        pytest.param(None, _on_tainted(_taint(effect="NoExecute")), [], id="no-execute-ignored"),
        pytest.param(
            None, _on_tainted(_taint(effect="PreferNoSchedule")), [], id="prefer-ignored-by-default"
        ),
        pytest.param(
            {"includePreferNoSchedule": True},
            _on_tainted(_taint(effect="PreferNoSchedule")),
            ["p"],
            id="prefer-included",
        ),
        pytest.param(
            {"includePreferNoSchedule": True},
            _on_tainted(
                _taint("kubelet-companion.io/emptying", "HighNodeUtilization", "PreferNoSchedule")
            ),
            [],
            id="our-emptying-taint-is-no-part-of-the-cluster",
        ),
        pytest.param(
            {"excludedTaints": ["dedicated"]}, _on_tainted(_taint()), [], id="excluded-by-key"
        ),
        pytest.param(
            {"excludedTaints": ["dedicated=x"]},
            _on_tainted(_taint()),
            [],
            id="excluded-by-key-and-value",
        ),
        pytest.param(
            {"excludedTaints": ["dedicated=y"]},
            _on_tainted(_taint()),
            ["p"],
            id="excluded-value-differs",
        ),
        pytest.param(
            {"excludedTaints": ["dedicated="]},
            _on_tainted(_taint(value="")),
            ["p"],
            id="key-equals-empty-value-never-names-a-taint",
        ),
        pytest.param(
            {"includedTaints": ["dedicated"]},
            _on_tainted(_taint(key="other")),
            [],
            id="included-lists-only-others",
        ),
        pytest.param(
            {"includedTaints": ["dedicated=x"]},
            _on_tainted(_taint(key="other"), _taint()),
            ["p"],
            id="included-by-key-and-value",
        ),
        pytest.param(
            {"includedTaints": []},
            _on_tainted(_taint()),
            [],
            id="empty-included-list-includes-none",
        ),
        pytest.param(
            {"namespaces": {"exclude": ["default"]}},
            _on_tainted(_taint()),
            [],
            id="namespace-excluded",
        ),
        pytest.param(
            {"namespaces": {"include": ["default"]}},
            _on_tainted(_taint()),
            ["p"],
            id="namespace-included",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"app": "web"}}},
            _on_tainted(_taint(), labels={"app": "db"}),
            [],
            id="label-selector-excludes",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"app": "web"}}},
            _on_tainted(_taint(), labels={"app": "web"}),
            ["p"],
            id="label-selector-includes",
        ),
        pytest.param(None, _on_tainted(_taint(), phase="Succeeded"), [], id="finished-pod"),
        pytest.param(
            None,
            _on_tainted(_taint(), owner=owner_ref("DaemonSet", "ds")),
            [],
            id="evictor-filter-protects-daemonset-pods",
        ),
    ],
)
def test_untolerated_taints(
    args: dict[str, Any] | None, items: list[dict[str, Any]], evicted: list[str]
) -> None:
    """A pod goes when its node has a counted taint it does not tolerate."""
    assert _evicted(args, *items) == evicted


def test_default_evictor_node_fit_keeps_pods_with_nowhere_to_go() -> None:
    """With DefaultEvictor's nodeFit, a pod no other node can take stays (preEvictionFilter)."""
    items = [
        node("n1", taints=[_taint()]),
        node("n2", taints=[_taint(key="other")]),
        pod("p", "n1"),
    ]
    assert _evicted(None, *items) == ["p"]
    plan = run_cycle(policy((TAINTS, None), evictor_args={"nodeFit": True}), snapshot(*items))
    assert plan.allowed == []


def test_node_limit_moves_on_to_the_next_node() -> None:
    """Past the per-node limit the plugin goes on with the next node's pods."""
    items = [
        node("n1", taints=[_taint()]),
        node("n2", taints=[_taint()]),
        pod("a", "n1"),
        pod("b", "n1"),
        pod("c", "n2"),
    ]
    assert _evicted(None, *items, maxNoOfPodsToEvictPerNode=1) == ["a", "c"]


def test_total_limit_ends_the_run() -> None:
    """At the total limit nothing more is evicted."""
    items = [
        node("n1", taints=[_taint()]),
        node("n2", taints=[_taint()]),
        pod("a", "n1"),
        pod("c", "n2"),
    ]
    assert _evicted(None, *items, maxNoOfPodsToEvictTotal=1) == ["a"]


def test_reason_names_the_taint() -> None:
    """The plan says which taint the pod does not tolerate."""
    plan = run_cycle(policy((TAINTS, None)), snapshot(*_on_tainted(_taint())))
    assert [e.reason for e in plan.allowed] == ["does not tolerate dedicated=x:NoSchedule"]
