"""PodLifeTime: age, states, conditions, exit codes and owner kinds (AND), oldest first."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.core.cycle import run_cycle
from tests.harness.deschedulerstate import ONLY_ARGS, node, pod, policy, policy_errors, snapshot
from tests.harness.kubeobjects import owner_ref
from tests.harness.podstatus import condition, container, with_status

LIFETIME = "PodLifeTime"
HOUR = 3600


def _evicted(args: dict[str, Any], *items: dict[str, Any], **top: Any) -> list[str]:
    # A cycle needs two Ready nodes; "spare" is the second where a test has one.
    plan = run_cycle(policy((LIFETIME, args), **top), snapshot(node("spare"), *items))
    return [e.name for e in plan.allowed]


def _aged(name: str, age: float, node_name: str = "n1", **kwargs: Any) -> dict[str, Any]:
    return with_status(pod(name, node_name, **kwargs), age=age)


def _with(name: str, **status: Any) -> dict[str, Any]:
    return with_status(pod(name, "n1", phase=status.pop("phase", "Running")), **status)


@pytest.mark.parametrize(
    ("args", "items", "evicted"),
    [
        pytest.param(
            {"maxPodLifeTimeSeconds": HOUR},
            [node("n1"), _aged("old", HOUR + 1), _aged("exact", HOUR), _aged("young", 60)],
            ["old"],
            id="older-than-max-strictly",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 0},
            [node("n1"), _aged("future", -30), _aged("now", 0), _aged("second", 1)],
            ["second"],
            id="whole-seconds-and-never-from-the-future",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 10},
            [
                node("n1"),
                node("n2"),
                _aged("b", 500, "n2"),
                _aged("c", 100),
                _aged("a", 500),
                _aged("d", 900, "n2"),
            ],
            ["d", "a", "b", "c"],
            id="oldest-first-across-nodes-ties-by-name",
        ),
        pytest.param(
            {"states": ["Pending"]},
            [node("n1"), _with("pending", phase="Pending"), _with("running")],
            ["pending"],
            id="state-is-the-phase",
        ),
        pytest.param(
            {"states": ["NodeLost"]},
            [node("n1"), _with("lost", phase="Unknown", reason="NodeLost"), _with("running")],
            ["lost"],
            id="state-is-the-pod-reason",
        ),
        pytest.param(
            {"states": ["ImagePullBackOff"]},
            [
                node("n1"),
                _with("pull", phase="Pending", containers=[container(waiting="ImagePullBackOff")]),
                _with("crash", containers=[container(3, waiting="CrashLoopBackOff")]),
            ],
            ["pull"],
            id="state-is-a-waiting-reason",
        ),
        pytest.param(
            {"states": ["OOMKilled"]},
            [
                node("n1"),
                _with(
                    "oom",
                    containers=[container(1), container(terminated="OOMKilled", exit_code=137)],
                ),
                _with("error", containers=[container(terminated="Error", exit_code=1)]),
            ],
            ["oom"],
            id="state-is-a-terminated-reason",
        ),
        pytest.param(
            {"states": ["Error"]},
            [node("n1"), _with("a", init_containers=[container(terminated="Error", exit_code=1)])],
            [],
            id="init-container-state-ignored-by-default",
        ),
        pytest.param(
            {"states": ["Error"], "includingInitContainers": True},
            [node("n1"), _with("a", init_containers=[container(terminated="Error", exit_code=1)])],
            ["a"],
            id="init-container-state-when-asked",
        ),
        pytest.param(
            {"states": ["CrashLoopBackOff"]},
            [
                node("n1"),
                _with("a", ephemeral_containers=[container(2, waiting="CrashLoopBackOff")]),
            ],
            [],
            id="ephemeral-container-state-ignored-by-default",
        ),
        pytest.param(
            {"states": ["CrashLoopBackOff"], "includingEphemeralContainers": True},
            [
                node("n1"),
                _with("a", ephemeral_containers=[container(2, waiting="CrashLoopBackOff")]),
            ],
            ["a"],
            id="ephemeral-container-state-when-asked",
        ),
        pytest.param(
            {"conditions": [{"type": "Ready", "status": "False"}]},
            [
                node("n1"),
                _with("unready", conditions=[condition("Ready", "False")]),
                _with("ready", conditions=[condition("Ready", "True")]),
            ],
            ["unready"],
            id="condition-type-and-status",
        ),
        pytest.param(
            {
                "conditions": [
                    {
                        "reason": "PodCompleted",
                        "status": "True",
                        "minTimeSinceLastTransitionSeconds": 300,
                    }
                ]
            },
            [
                node("n1"),
                _with(
                    "stale",
                    conditions=[condition("Ready", "False", reason="PodCompleted", moved=301)],
                ),
                _with(
                    "fresh",
                    conditions=[condition("Ready", "False", reason="PodCompleted", moved=60)],
                ),
                _with(
                    "other", conditions=[condition("Initialized", reason="PodCompleted", moved=900)]
                ),
                _with("untimed", conditions=[condition("Initialized", reason="PodCompleted")]),
            ],
            ["other"],
            id="condition-reason-status-and-time-on-the-same-condition",
        ),
        pytest.param(
            {"conditions": [{"minTimeSinceLastTransitionSeconds": 300}]},
            [
                node("n1"),
                _with(
                    "a",
                    conditions=[condition("PodScheduled", moved=400), condition("Ready", moved=10)],
                ),
                _with("b", conditions=[condition("PodScheduled", moved=200)]),
                _with("future", conditions=[condition("PodScheduled", moved=-400)]),
                _with("none"),
            ],
            ["a"],
            id="condition-time-alone",
        ),
        pytest.param(
            {"conditions": [{"type": "DisruptionTarget"}, {"reason": "Unschedulable"}]},
            [
                node("n1"),
                _with("a", conditions=[condition("DisruptionTarget")]),
                _with("b", conditions=[condition("PodScheduled", "False", reason="Unschedulable")]),
                _with("c", conditions=[condition("Ready")]),
            ],
            ["a", "b"],
            id="condition-filters-are-ored",
        ),
        pytest.param(
            {"exitCodes": [1, 2]},
            [
                node("n1"),
                _with("one", containers=[container(terminated="Error", exit_code=1)]),
                _with("three", containers=[container(terminated="Error", exit_code=3)]),
                _with("running", containers=[container(5)]),
            ],
            ["one"],
            id="exit-codes",
        ),
        pytest.param(
            {"exitCodes": [0]},
            [node("n1"), _with("done", phase="Succeeded", containers=[container(terminated="")])],
            ["done"],
            id="exit-code-absent-is-zero",
        ),
        pytest.param(
            {"exitCodes": [1]},
            [node("n1"), _with("a", init_containers=[container(terminated="Error", exit_code=1)])],
            [],
            id="init-exit-code-ignored-by-default",
        ),
        pytest.param(
            {"exitCodes": [1], "includingInitContainers": True},
            [node("n1"), _with("a", init_containers=[container(terminated="Error", exit_code=1)])],
            ["a"],
            id="init-exit-code-when-asked",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 60, "ownerKinds": {"include": ["Job"]}},
            [node("n1"), _aged("job", 90, owner=owner_ref("Job", "j")), _aged("rs", 90)],
            ["job"],
            id="owner-kinds-include",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 60, "ownerKinds": {"exclude": ["Job"]}},
            [node("n1"), _aged("job", 90, owner=owner_ref("Job", "j")), _aged("rs", 90)],
            ["rs"],
            id="owner-kinds-exclude",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": HOUR, "states": ["Running"], "exitCodes": [1]},
            [
                node("n1"),
                with_status(
                    pod("all", "n1"),
                    age=2 * HOUR,
                    containers=[container(terminated="Error", exit_code=1)],
                ),
                with_status(
                    pod("young", "n1"),
                    age=60,
                    containers=[container(terminated="Error", exit_code=1)],
                ),
                with_status(
                    pod("pending", "n1", phase="Pending"),
                    age=2 * HOUR,
                    containers=[container(terminated="Error", exit_code=1)],
                ),
                with_status(
                    pod("clean", "n1"),
                    age=2 * HOUR,
                    containers=[container(terminated="Completed", exit_code=0)],
                ),
            ],
            ["all"],
            id="criteria-are-anded",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 60, "namespaces": {"exclude": ["kube-system"]}},
            [node("n1"), _aged("a", 90, namespace="kube-system"), _aged("b", 90)],
            ["b"],
            id="namespaces-exclude",
        ),
        pytest.param(
            {
                "maxPodLifeTimeSeconds": 60,
                "labelSelector": {
                    "matchExpressions": [{"key": "keep", "operator": "DoesNotExist"}]
                },
            },
            [node("n1"), _aged("a", 90, labels={"keep": "1"}), _aged("b", 90)],
            ["b"],
            id="label-selector",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 60},
            [node("n1"), _aged("bare", 90, owner=None), _aged("gone", 90, deleting=True)],
            [],
            id="evictor-filter-applies",
        ),
    ],
)
def test_pod_lifetime(
    args: dict[str, Any], items: list[dict[str, Any]], evicted: list[str]
) -> None:
    """Pods matching every criterion given are evicted, oldest first."""
    assert _evicted(args, *items) == evicted


def test_a_node_limit_skips_the_pod_not_the_rest() -> None:
    """At a node's limit the next oldest pod of that node is skipped, and younger pods of
    other nodes still go (upstream ``continue``s, unlike the per-node plugins)."""
    items = [node("n1"), node("n2"), _aged("a", 300), _aged("b", 200), _aged("c", 100, "n2")]
    assert _evicted({"maxPodLifeTimeSeconds": 10}, *items, maxNoOfPodsToEvictPerNode=1) == [
        "a",
        "c",
    ]


def test_the_total_limit_ends_the_plugin() -> None:
    """The total limit stops the plugin after the oldest pods."""
    items = [node("n1"), node("n2"), _aged("a", 300), _aged("b", 200, "n2"), _aged("c", 100)]
    assert _evicted({"maxPodLifeTimeSeconds": 10}, *items, maxNoOfPodsToEvictTotal=2) == ["a", "b"]


NO_CRITERION = (
    "at least one filtering criterion must be specified "
    "(maxPodLifeTimeSeconds, states, conditions, or exitCodes)"
)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param({}, [f"{ONLY_ARGS}: {NO_CRITERION}"], id="no-criterion"),
        pytest.param(
            {"ownerKinds": {"include": ["Job"]}, "namespaces": {"include": ["a"]}},
            [f"{ONLY_ARGS}: {NO_CRITERION}"],
            id="owner-kinds-and-namespaces-are-not-criteria",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": -1},
            [f"{ONLY_ARGS}.maxPodLifeTimeSeconds: must be >= 0"],
            id="negative-lifetime",
        ),
        pytest.param(
            {"states": ["Running", "Sleeping"]},
            [
                f"{ONLY_ARGS}.states: 'Sleeping': states must be one of [Completed "
                "ContainerCannotRun ContainerCreating CrashLoopBackOff CreateContainerConfigError "
                "CreateContainerError DeadlineExceeded ErrImagePull Error Evicted Failed "
                "ImagePullBackOff InvalidImageName NodeAffinity NodeLost OOMKilled Pending "
                "PodInitializing Running Shutdown StartError Succeeded "
                "UnexpectedAdmissionError Unknown]"
            ],
            id="states-outside-the-allowed",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 1, "ownerKinds": {"include": ["Job"], "exclude": ["RS"]}},
            [f"{ONLY_ARGS}.ownerKinds: only one of include and exclude can be set"],
            id="owner-kinds-include-and-exclude",
        ),
        pytest.param(
            {"conditions": [{"type": "Ready"}, {}]},
            [
                f"{ONLY_ARGS}.conditions[1]: at least one of type, status, reason, or "
                "minTimeSinceLastTransitionSeconds must be set"
            ],
            id="empty-condition-filter",
        ),
        pytest.param(
            {"conditions": [{"minTimeSinceLastTransitionSeconds": -5}]},
            [f"{ONLY_ARGS}.conditions[0].minTimeSinceLastTransitionSeconds: must be >= 0"],
            id="negative-transition-time",
        ),
        pytest.param(
            {"exitCodes": [1, 2**31]},
            [f"{ONLY_ARGS}.exitCodes: 2147483648: must be 32-bit integers"],
            id="exit-code-beyond-int32",
        ),
        pytest.param(
            {"maxPodLifeTimeSeconds": 1, "namespaces": {"include": ["a"], "exclude": ["b"]}},
            [f"{ONLY_ARGS}.namespaces: only one of include and exclude can be set"],
            id="namespaces-include-and-exclude",
        ),
        pytest.param(
            {
                "maxPodLifeTimeSeconds": 1,
                "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
            },
            [f"{ONLY_ARGS}.labelSelector: a In needs at least one value"],
            id="label-selector-without-values",
        ),
    ],
)
def test_bad_args_are_reported_with_their_path(args: dict[str, Any], expected: list[str]) -> None:
    """Each of upstream's validation rules rejects the args, naming the field."""
    assert policy_errors(LIFETIME, args) == expected


def test_enabled_without_args_is_an_error() -> None:
    """Enabled with no pluginConfig, the plugin has no criterion: an error, as upstream."""
    assert policy_errors(LIFETIME, None) == [
        f"profiles[0].pluginConfig: PodLifeTime is enabled without args, and its defaults are "
        f"not valid: {NO_CRITERION}"
    ]
