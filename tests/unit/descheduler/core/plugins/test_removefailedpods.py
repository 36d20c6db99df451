"""RemoveFailedPods: Failed pods past a minimum age, by reasons, exit codes and owner kinds."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.core.plugins.removefailedpods import RemoveFailedPodsArgs
from agent.descheduler.core.policy import parse_policy
from tests.harness.deschedulerstate import ONLY_ARGS, node, pod, policy, policy_errors, snapshot
from tests.harness.kubeobjects import owner_ref
from tests.harness.podstatus import container, with_status

FAILED = "RemoveFailedPods"
HOUR = 3600


def _evicted(
    args: dict[str, Any],
    *items: dict[str, Any],
    evictor_args: dict[str, Any] | None = None,
    **top: Any,
) -> list[str]:
    # A cycle needs two Ready nodes; "spare" is the second where a test has one.
    chosen = policy((FAILED, args), evictor_args=evictor_args, **top)
    return [e.name for e in run_cycle(chosen, snapshot(node("spare"), *items)).allowed]


def _failed(
    name: str, node_name: str = "n1", *, age: float = 2 * HOUR, **status: Any
) -> dict[str, Any]:
    kwargs = {k: status.pop(k) for k in ("namespace", "labels", "owner") if k in status}
    return with_status(pod(name, node_name, phase="Failed", **kwargs), age=age, **status)


ERROR = container(terminated="Error", exit_code=1)


@pytest.mark.parametrize(
    ("args", "items", "evicted"),
    [
        pytest.param(
            {},
            [
                node("n1"),
                _failed("failed"),
                with_status(pod("running", "n1"), age=2 * HOUR),
                with_status(pod("done", "n1", phase="Succeeded"), age=2 * HOUR),
            ],
            ["failed"],
            id="failed-only",
        ),
        pytest.param(
            {},
            [node("n1"), _failed("old", age=HOUR), _failed("young", age=HOUR - 1)],
            ["old"],
            id="default-min-lifetime-an-hour",
        ),
        pytest.param(
            {"minPodLifetimeSeconds": None},
            [node("n1"), _failed("old", age=HOUR), _failed("young", age=HOUR - 1)],
            ["old"],
            id="null-min-lifetime-is-the-default",
        ),
        pytest.param(
            {"minPodLifetimeSeconds": 0},
            [node("n1"), _failed("young", age=0), _failed("future", age=-60)],
            ["young"],
            id="zero-min-lifetime-but-never-from-the-future",
        ),
        pytest.param(
            {"excludeOwnerKinds": ["Job"]},
            [node("n1"), _failed("job", owner=owner_ref("Job", "j")), _failed("rs")],
            ["rs"],
            id="exclude-owner-kinds",
        ),
        pytest.param(
            {"reasons": ["Error"]},
            [
                node("n1"),
                _failed("error", containers=[container(1), ERROR]),
                _failed("oom", containers=[container(terminated="OOMKilled", exit_code=137)]),
                _failed("none"),
            ],
            ["error"],
            id="reason-of-a-terminated-container",
        ),
        pytest.param(
            {"reasons": ["CreateContainerConfigError"]},
            [
                node("n1"),
                _failed("a", containers=[container(waiting="CreateContainerConfigError")]),
            ],
            ["a"],
            id="reason-of-a-waiting-container",
        ),
        pytest.param(
            {"reasons": ["Evicted", "NodeAffinity"]},
            [node("n1"), _failed("evicted", reason="Evicted"), _failed("lost", reason="NodeLost")],
            ["evicted"],
            id="reason-of-the-pod",
        ),
        pytest.param(
            {"reasons": ["Error"]},
            [node("n1"), _failed("a", init_containers=[ERROR])],
            [],
            id="init-container-reason-ignored-by-default",
        ),
        pytest.param(
            {"reasons": ["Error"], "includingInitContainers": True},
            [node("n1"), _failed("a", init_containers=[ERROR])],
            ["a"],
            id="init-container-reason-when-asked",
        ),
        pytest.param(
            {"reasons": [""]},
            [node("n1"), _failed("a", containers=[container(terminated="", exit_code=2)])],
            [],
            id="an-empty-reason-never-matches",
        ),
        pytest.param(
            {"exitCodes": [137]},
            [
                node("n1"),
                _failed("oom", containers=[container(terminated="OOMKilled", exit_code=137)]),
                _failed("error", containers=[ERROR]),
            ],
            ["oom"],
            id="exit-codes",
        ),
        pytest.param(
            {"exitCodes": [1]},
            [node("n1"), _failed("a", init_containers=[ERROR])],
            [],
            id="init-exit-code-ignored-by-default",
        ),
        pytest.param(
            {"exitCodes": [1], "includingInitContainers": True},
            [node("n1"), _failed("a", init_containers=[ERROR])],
            ["a"],
            id="init-exit-code-when-asked",
        ),
        pytest.param(
            {"reasons": ["Error"], "exitCodes": [2]},
            [
                node("n1"),
                _failed("both", containers=[container(terminated="Error", exit_code=2)]),
                _failed("reason-only", containers=[ERROR]),
            ],
            ["both"],
            id="reasons-and-exit-codes-both-hold",
        ),
        pytest.param(
            {"namespaces": {"include": ["batch"]}},
            [node("n1"), _failed("a", namespace="batch"), _failed("b")],
            ["a"],
            id="namespaces-include",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"tier": "batch"}}},
            [node("n1"), _failed("a", labels={"tier": "batch"}), _failed("b")],
            ["a"],
            id="label-selector",
        ),
        pytest.param(
            {},
            [node("n1"), _failed("b", "n2"), _failed("c"), _failed("a"), node("n2")],
            ["a", "c", "b"],
            id="node-by-node-pods-by-name",
        ),
        pytest.param(
            {},
            [node("n1"), _failed("bare", owner=None)],
            [],
            id="bare-failed-pods-protected-by-default",
        ),
    ],
)
def test_failed_pods(args: dict[str, Any], items: list[dict[str, Any]], evicted: list[str]) -> None:
    """Failed pods old enough, matching the reasons and exit codes given, are evicted."""
    assert _evicted(args, *items) == evicted


def test_bare_failed_pods_go_when_the_evictor_allows() -> None:
    """DefaultEvictor's ``evictFailedBarePods`` lets a Failed pod without owner go."""
    items = [node("n1"), _failed("bare", owner=None)]
    assert _evicted({}, *items, evictor_args={"evictFailedBarePods": True}) == ["bare"]


def test_a_node_limit_ends_the_node() -> None:
    """With one eviction per node, each node loses its first Failed pod only."""
    items = [node("n1"), node("n2"), _failed("a"), _failed("b"), _failed("c", "n2")]
    assert _evicted({}, *items, maxNoOfPodsToEvictPerNode=1) == ["a", "c"]


def test_the_total_limit_ends_the_plugin() -> None:
    """The total limit stops the plugin."""
    items = [node("n1"), node("n2"), _failed("a"), _failed("b", "n2")]
    assert _evicted({}, *items, maxNoOfPodsToEvictTotal=1) == ["a"]


def test_the_reason_names_why_it_failed() -> None:
    """The plan names the pod's reason, or its first container's."""
    items = [
        node("n1"),
        node("n2"),
        _failed("a", reason="Evicted"),
        _failed("b", containers=[ERROR]),
    ]
    plan = run_cycle(policy((FAILED, {})), snapshot(*items))
    assert [e.reason for e in plan.allowed] == ["failed (Evicted)", "failed (Error)"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"namespaces": {"include": ["a"], "exclude": ["b"]}},
            [f"{ONLY_ARGS}.namespaces: only one of include and exclude can be set"],
            id="namespaces-include-and-exclude",
        ),
        pytest.param(
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                }
            },
            [f"{ONLY_ARGS}.labelSelector: a Exists takes no values"],
            id="label-selector-exists-with-values",
        ),
        pytest.param(
            {"minPodLifetimeSeconds": -1},
            [f"{ONLY_ARGS}.minPodLifetimeSeconds: must be >= 0"],
            id="negative-min-lifetime",
        ),
        pytest.param(
            {"exitCodes": [-(2**31) - 1]},
            [f"{ONLY_ARGS}.exitCodes: -2147483649: must be 32-bit integers"],
            id="exit-code-beyond-int32",
        ),
        pytest.param(
            {"reasons": "Error", "excludeOwnerKinds": [1]},
            [
                f"{ONLY_ARGS}.excludeOwnerKinds[0]: must be a string",
                f"{ONLY_ARGS}.reasons: must be a list",
            ],
            id="wrong-types",
        ),
    ],
)
def test_bad_args_are_reported_with_their_path(args: dict[str, Any], expected: list[str]) -> None:
    """Each bad arg is rejected, naming the field."""
    assert policy_errors(FAILED, args) == expected


def test_enabled_without_args_takes_upstreams_defaults() -> None:
    """Enabled with no pluginConfig, the plugin runs with upstream's defaults (an hour)."""
    raw = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{"name": "p", "plugins": {"deschedule": {"enabled": [FAILED]}}}],
    }
    args = parse_policy(raw, "<test>").profiles[0].args[FAILED]
    assert args == RemoveFailedPodsArgs()
    assert args.min_age == HOUR
