"""Taint/toleration matching, as ``v1.Toleration.ToleratesTaint`` defines it."""

from __future__ import annotations

import pytest

from agent.kubesemantics.tolerations import (
    daemon_pod_tolerations,
    describe_taint,
    tolerates,
    untolerated,
)

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
        ({"key": "dedicated", "value": "gpu"}, True),
        ({"key": "dedicated", "operator": "Equal", "value": "cpu"}, False),
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "dedicated", "operator": "Bogus", "value": "gpu"}, False),
    ],
)
def test_toleration_matching_follows_upstream(toleration: dict[str, str], expected: bool) -> None:
    """Key, effect and Equal/Exists operators match exactly as the API's helper does."""
    assert tolerates(toleration, TAINT) is expected


@pytest.mark.parametrize(
    ("operator", "limit", "value", "expected"),
    [
        ("Gt", "5", "7", True),
        ("Gt", "5", "5", False),
        ("Lt", "5", "3", True),
        ("Lt", "5", "9", False),
        ("Gt", "5", "abc", False),
        ("Gt", "05", "7", False),
    ],
)
def test_numeric_operators_compare_the_taint_value(
    operator: str, limit: str, value: str, expected: bool
) -> None:
    """Lt/Gt compare the taint's value against the toleration's, as decimal integers only."""
    toleration = {"key": "k", "operator": operator, "value": limit}
    assert tolerates(toleration, {"key": "k", "value": value, "effect": "NoSchedule"}) is expected


def test_daemon_defaults_tolerate_the_controllers_condition_taints() -> None:
    """Every daemon pod tolerates not-ready/unreachable NoExecute and pressure/unschedulable."""
    taints = [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    ]
    assert untolerated(taints, daemon_pod_tolerations({})) == []


def test_not_ready_noschedule_is_not_a_default_toleration() -> None:
    """The defaults cover not-ready only as NoExecute, so the NoSchedule variant still repels."""
    taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    assert untolerated([taint], daemon_pod_tolerations({})) == [taint]


def test_network_unavailable_is_tolerated_only_with_host_network() -> None:
    """network-unavailable is a default toleration for hostNetwork daemon pods only."""
    taint = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    assert untolerated([taint], daemon_pod_tolerations({})) == [taint]
    assert untolerated([taint], daemon_pod_tolerations({"hostNetwork": True})) == []


def test_prefer_no_schedule_never_counts() -> None:
    """PreferNoSchedule taints never keep a daemon pod away."""
    assert untolerated([{"key": "x", "effect": "PreferNoSchedule"}], []) == []


def test_taints_print_like_kubectl() -> None:
    """Taints are described as key=value:Effect, or key:Effect without a value."""
    assert describe_taint(TAINT) == "dedicated=gpu:NoSchedule"
    assert describe_taint({"key": "k", "effect": "NoExecute"}) == "k:NoExecute"
