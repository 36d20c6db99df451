"""The pod status the pod-state plugins read: what is kept, equal on both paths, shared."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist.projector import PodListProjector
from agent.descheduler.cache.sharing import Sharing
from agent.descheduler.cache.state import projections
from agent.descheduler.cache.wire import codec_for
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.policy import parse_policy
from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.model.podstatus import (
    STATUS,
    ContainerStatusInfo,
    PodConditionInfo,
    PodStatusInfo,
    status_of,
    transition_time,
)
from agent.descheduler.model.values import EMPTY_MAP
from tests.harness.podstatus import container

CREATED = "2026-11-22T00:00:00Z"


def _pod(
    status: dict[str, Any] | None, created: str | None = CREATED, name: str = "p"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns"}
    if created is not None:
        metadata["creationTimestamp"] = created
    built: dict[str, Any] = {"metadata": metadata, "spec": {"nodeName": "n1"}}
    if status is not None:
        built["status"] = status
    return built


def _at(second: int) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": f"2026-11-22T00:00:{second:02d}Z",
    }


STATUSES = [
    pytest.param(None, None, id="no-status"),
    pytest.param({"phase": "Running"}, None, id="phase-only"),
    pytest.param(
        {
            "containerStatuses": [container(0), container(0)],
            "initContainerStatuses": [container(0)],
        },
        None,
        id="running-containers-say-nothing",
    ),
    pytest.param(
        {"containerStatuses": [container(0), container(4)]},
        PodStatusInfo(containers=(ContainerStatusInfo(restarts=4),)),
        id="only-restarted-containers-kept",
    ),
    pytest.param(
        {
            "containerStatuses": [
                container(2, waiting="CrashLoopBackOff"),
                {"name": "x", "state": {"waiting": {}}},
            ]
        },
        PodStatusInfo(containers=(ContainerStatusInfo(restarts=2, waiting="CrashLoopBackOff"),)),
        id="waiting-reason-and-waiting-without-one",
    ),
    pytest.param(
        {
            "initContainerStatuses": [
                container(terminated="Completed", exit_code=0),
                container(terminated=""),
            ]
        },
        PodStatusInfo(
            init_containers=(
                ContainerStatusInfo(terminated="Completed", exit_code=0),
                ContainerStatusInfo(exit_code=0),
            )
        ),
        id="terminated-kept-absent-exit-code-is-zero",
    ),
    pytest.param(
        {"ephemeralContainerStatuses": [container(terminated="Error", exit_code=3)]},
        PodStatusInfo(ephemeral_containers=(ContainerStatusInfo(terminated="Error", exit_code=3),)),
        id="ephemeral",
    ),
    pytest.param(
        {"phase": "Failed", "reason": "Evicted"},
        PodStatusInfo(reason="Evicted"),
        id="pod-reason",
    ),
    pytest.param(
        {
            "conditions": [
                _at(7),
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "x",
                },
            ]
        },
        PodStatusInfo(
            conditions=(
                PodConditionInfo("Ready", "True", "", 7.0),
                PodConditionInfo("PodScheduled", "False", "Unschedulable", None),
            )
        ),
        id="conditions-relative-to-creation",
    ),
]


@pytest.mark.parametrize(("status", "expected"), STATUSES)
def test_what_the_projection_keeps(
    status: dict[str, Any] | None, expected: PodStatusInfo | None
) -> None:
    """Restarts, reasons, exit codes and conditions are kept; a pod that has none keeps nothing."""
    projected = projection.project_pod(_pod(status))
    if expected is None:
        assert projected.extra is EMPTY_MAP
    else:
        assert projected.extra == {STATUS: expected}


def _both_paths(pods: list[dict[str, Any]]) -> tuple[list[PodInfo], list[PodInfo], list[PodInfo]]:
    data = json.dumps({"metadata": {}, "items": pods}).encode()
    by_json = [projection.project_pod(pod) for pod in json.loads(data)["items"]]
    by_wire = [projection.project_pod(pod) for pod in codec_for("Pod").decode_page(data)["items"]]
    projector = PodListProjector()
    by_list = [pod for _, pod in projector.decode_page(data)["entries"]]
    return by_json, by_wire, by_list


@pytest.mark.parametrize(("status", "expected"), STATUSES)
def test_every_path_projects_the_same_status(
    status: dict[str, Any] | None, expected: PodStatusInfo | None
) -> None:
    """``json.loads``, the wire structs and the pod-list fast path keep the same status."""
    by_json, by_wire, by_list = _both_paths([_pod(status), _pod(status, created=None)])
    assert by_wire == by_json
    assert by_list == by_json
    assert status_of(by_list[0]) == (expected or PodStatusInfo())


def test_condition_times_come_back_exactly() -> None:
    """A condition's time is creation plus its offset: the API's own second, and without a
    creation time the offset is the time itself."""
    with_creation, without = _both_paths(
        [_pod({"conditions": [_at(9)]}), _pod({"conditions": [_at(9)]}, created=None)]
    )[2]
    moved = projection.parse_timestamp("2026-11-22T00:00:09Z")
    for pod in (with_creation, without):
        assert transition_time(pod, status_of(pod).conditions[0]) == moved


def _started(name: str, minute: int) -> dict[str, Any]:
    """A pod created at ``minute``, Ready 7 seconds later, one container restarted once."""
    status = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": f"2026-11-22T00:{minute:02d}:07Z",
            }
        ],
        "containerStatuses": [container(1)],
    }
    return _pod(status, created=f"2026-11-22T00:{minute:02d}:00Z", name=name)


def test_pods_started_in_the_same_rhythm_share_one_status_on_the_list_path() -> None:
    """Two pods created minutes apart but Ready 7 s after creation hold the same objects."""
    *_, (first, second) = _both_paths([_started("a", 1), _started("b", 5)])
    assert first.creation_timestamp != second.creation_timestamp
    assert first.extra is second.extra


def test_pods_started_in_the_same_rhythm_share_one_status_through_sharing() -> None:
    """On the watch path, ``Sharing`` gives such pods one copy of their status too."""
    sharing = Sharing()
    first, second = (
        sharing.pod(projection.project_pod(p)) for p in (_started("a", 1), _started("b", 5))
    )
    assert first.extra is second.extra


def test_every_plugin_that_reads_pod_status_says_so() -> None:
    """A plugin module that imports ``podstatus`` is registered as reading the pod-state
    details, and no other is: the pod cache leaves them out when no enabled plugin says so,
    so a plugin that read them without saying so would see every pod without a status."""
    readers = set()
    for spec in REGISTRY.values():
        module = sys.modules[spec.factory.__module__]
        if "agent.descheduler.model.podstatus" in Path(module.__file__ or "").read_text("utf-8"):
            readers.add(spec.name)
    assert readers == {name for name, spec in REGISTRY.items() if spec.reads_pod_status}
    assert readers == {"PodLifeTime", "RemoveFailedPods", "RemovePodsHavingTooManyRestarts"}


@pytest.mark.parametrize(
    ("plugins", "reads"),
    [
        pytest.param({"balance": ["LowNodeUtilization", "RemoveDuplicates"]}, False, id="parity"),
        pytest.param({"deschedule": ["PodLifeTime"]}, True, id="podlifetime"),
        pytest.param({"deschedule": ["RemoveFailedPods"]}, True, id="failed"),
        pytest.param({"deschedule": ["RemovePodsHavingTooManyRestarts"]}, True, id="restarts"),
        pytest.param({"deschedule": ["RemovePodsViolatingNodeTaints"]}, False, id="taints"),
    ],
)
def test_the_pod_cache_keeps_pod_status_only_for_a_plugin_that_reads_it(
    plugins: dict[str, list[str]], reads: bool
) -> None:
    """The caches' projection follows the policy: pod-state details are kept exactly when
    an enabled plugin reads them, and a pod then keeps its status, else not."""
    policy = parse_policy(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            "profiles": [
                {
                    "name": "p",
                    "plugins": {point: {"enabled": names} for point, names in plugins.items()},
                    "pluginConfig": [
                        {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60}},
                        {
                            "name": "RemovePodsHavingTooManyRestarts",
                            "args": {"podRestartThreshold": 3},
                        },
                        {
                            "name": "LowNodeUtilization",
                            "args": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}},
                        },
                    ],
                }
            ],
        },
        "test",
    )
    chosen = projections(with_status=policy.reads_pod_status)
    assert policy.reads_pod_status is reads
    assert chosen.pod_status is reads
    crashing = _pod({"containerStatuses": [{"restartCount": 4}]})
    assert (STATUS in chosen.pod(crashing).extra) is reads
