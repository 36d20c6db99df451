"""RemovePodsHavingTooManyRestarts: restart threshold, init containers, states, order, limits."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from tests.harness.deschedulerstate import ONLY_ARGS, node, pod, policy, policy_errors, snapshot
from tests.harness.podstatus import container, with_status

RESTARTS = "RemovePodsHavingTooManyRestarts"


def _evicted(args: dict[str, Any], *items: dict[str, Any], **top: Any) -> list[str]:
    # A cycle needs two Ready nodes; "spare" is the second where a test has one.
    plan = run_cycle(policy((RESTARTS, args), **top), snapshot(node("spare"), *items))
    return [e.name for e in plan.allowed]


def _restarting(name: str, restarts: int, node_name: str = "n1", **kwargs: Any) -> dict[str, Any]:
    return with_status(pod(name, node_name, **kwargs), containers=[container(restarts)])


CRASHING = container(7, waiting="CrashLoopBackOff")


@pytest.mark.parametrize(
    ("args", "items", "evicted"),
    [
        pytest.param(
            {"podRestartThreshold": 5},
            [node("n1"), _restarting("five", 5), _restarting("four", 4)],
            ["five"],
            id="at-the-threshold-not-below",
        ),
        pytest.param(
            {"podRestartThreshold": 5},
            [
                node("n1"),
                with_status(pod("a", "n1"), containers=[container(2), container(3)]),
            ],
            ["a"],
            id="containers-are-summed",
        ),
        pytest.param(
            {"podRestartThreshold": 3},
            [node("n1"), with_status(pod("a", "n1"), init_containers=[container(4)])],
            [],
            id="init-containers-not-counted-by-default",
        ),
        pytest.param(
            {"podRestartThreshold": 3, "includingInitContainers": True},
            [
                node("n1"),
                with_status(
                    pod("a", "n1"), init_containers=[container(2)], containers=[container(1)]
                ),
            ],
            ["a"],
            id="init-containers-counted-when-asked",
        ),
        pytest.param(
            {"podRestartThreshold": 1},
            [node("n1"), pod("never", "n1")],
            [],
            id="no-container-statuses-no-restarts",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "states": ["Running"]},
            [node("n1"), _restarting("up", 3), _restarting("waiting", 3, phase="Pending")],
            ["up"],
            id="states-running-is-the-phase",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]},
            [
                node("n1"),
                _restarting("up", 3),
                with_status(pod("crashing", "n1"), containers=[container(1), CRASHING]),
            ],
            ["crashing"],
            id="states-crashloop-is-a-waiting-container",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]},
            [
                node("n1"),
                with_status(pod("a", "n1", phase="Pending"), init_containers=[CRASHING]),
            ],
            [],
            id="waiting-init-container-ignored-by-default",
        ),
        pytest.param(
            {
                "podRestartThreshold": 1,
                "states": ["CrashLoopBackOff"],
                "includingInitContainers": True,
            },
            [
                node("n1"),
                with_status(pod("a", "n1", phase="Pending"), init_containers=[CRASHING]),
            ],
            ["a"],
            id="waiting-init-container-with-init-containers",
        ),
        pytest.param(
            {"podRestartThreshold": 1},
            [node("n1"), _restarting("failed", 2, phase="Failed")],
            ["failed"],
            id="any-phase",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "namespaces": {"include": ["apps"]}},
            [node("n1"), _restarting("a", 2, namespace="apps"), _restarting("b", 2)],
            ["a"],
            id="namespaces-include",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "namespaces": {"exclude": ["apps"]}},
            [node("n1"), _restarting("a", 2, namespace="apps"), _restarting("b", 2)],
            ["b"],
            id="namespaces-exclude",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "labelSelector": {"matchLabels": {"app": "web"}}},
            [node("n1"), _restarting("a", 2, labels={"app": "web"}), _restarting("b", 2)],
            ["a"],
            id="label-selector",
        ),
        pytest.param(
            {"podRestartThreshold": 1},
            [node("n1"), _restarting("bare", 9, owner=None), _restarting("gone", 9, deleting=True)],
            [],
            id="evictor-filter-applies",
        ),
        pytest.param(
            {"podRestartThreshold": 1},
            [node("n1"), _restarting("a", 1), _restarting("c", 9), _restarting("b", 9)],
            ["b", "c", "a"],
            id="most-restarts-first-ties-by-name",
        ),
    ],
)
def test_too_many_restarts(
    args: dict[str, Any], items: list[dict[str, Any]], evicted: list[str]
) -> None:
    """Pods whose restarts reach the threshold (in the asked states) are evicted, in order."""
    assert _evicted(args, *items) == evicted


def test_a_node_limit_keeps_the_most_restarted_and_moves_to_the_next_node() -> None:
    """With one eviction per node, each node loses its most restarted pod and no other."""
    items = [
        node("n1"),
        node("n2"),
        _restarting("a1", 2),
        _restarting("a2", 8),
        _restarting("b1", 5, "n2"),
        _restarting("b2", 3, "n2"),
    ]
    assert _evicted({"podRestartThreshold": 1}, *items, maxNoOfPodsToEvictPerNode=1) == ["a2", "b1"]


def test_the_total_limit_ends_the_plugin() -> None:
    """The total limit stops the plugin on the first node; later nodes lose nothing."""
    items = [node("n1"), node("n2"), _restarting("a", 2), _restarting("b", 3, "n2")]
    assert _evicted({"podRestartThreshold": 1}, *items, maxNoOfPodsToEvictTotal=1) == ["a"]


def test_the_reason_names_the_restarts() -> None:
    """The plan says how many restarts made the pod go, against which threshold."""
    plan = run_cycle(
        policy((RESTARTS, {"podRestartThreshold": 2})),
        snapshot(node("n1"), node("n2"), _restarting("a", 4)),
    )
    assert [e.reason for e in plan.allowed] == ["4 restarts (threshold 2)"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {},
            [
                f"{ONLY_ARGS}.podRestartThreshold: invalid PodsHavingTooManyRestarts threshold: "
                "must be at least 1"
            ],
            id="threshold-required",
        ),
        pytest.param(
            {"podRestartThreshold": 0, "states": ["Running"]},
            [
                f"{ONLY_ARGS}.podRestartThreshold: invalid PodsHavingTooManyRestarts threshold: "
                "must be at least 1"
            ],
            id="threshold-zero",
        ),
        pytest.param(
            {"podRestartThreshold": 2**31},
            [f"{ONLY_ARGS}.podRestartThreshold: must be <= 2.14748e+09"],
            id="threshold-beyond-int32",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "states": ["Running", "Pending", "OOMKilled"]},
            [
                f"{ONLY_ARGS}.states: 'Pending', 'OOMKilled': states must be one of "
                "[CrashLoopBackOff Running]"
            ],
            id="states-outside-the-allowed",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "namespaces": {"include": ["a"], "exclude": ["b"]}},
            [f"{ONLY_ARGS}.namespaces: only one of include and exclude can be set"],
            id="namespaces-include-and-exclude",
        ),
        pytest.param(
            {
                "podRestartThreshold": 1,
                "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]},
            },
            [f"{ONLY_ARGS}.labelSelector: unknown operator 'Near'"],
            id="label-selector-operator",
        ),
        pytest.param(
            {"podRestartThreshold": 1, "includingInitContainers": "yes", "surprise": 1},
            [
                f"{ONLY_ARGS}.surprise: unknown field (known: includingInitContainers, "
                "labelSelector, namespaces, podRestartThreshold, states)",
                f"{ONLY_ARGS}.includingInitContainers: must be true or false",
            ],
            id="unknown-field-and-bad-bool",
        ),
    ],
)
def test_bad_args_are_reported_with_their_path(args: dict[str, Any], expected: list[str]) -> None:
    """Each of upstream's validation rules rejects the args, naming the field."""
    assert policy_errors(RESTARTS, args) == expected


def test_enabled_without_args_is_an_error() -> None:
    """Enabled with no pluginConfig, the plugin has no threshold: an error, not a default of 0
    that would evict every pod."""
    assert policy_errors(RESTARTS, None) == [
        "profiles[0].pluginConfig: RemovePodsHavingTooManyRestarts is enabled without args, "
        "and its defaults are not valid: podRestartThreshold: invalid "
        "PodsHavingTooManyRestarts threshold: must be at least 1"
    ]
