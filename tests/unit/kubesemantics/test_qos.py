"""Pod QoS and criticality as Kubernetes computes them, init containers included."""

from typing import Any

import pytest

from agent.kubesemantics.qos import QOSClass, compute_pod_qos, critical_reason, pod_qos
from agent.swap.pods import ContainerKind, pod_view, runtime_id

GUARANTEED = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


def spec(*resources: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {
        "containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)],
        "initContainers": [{"name": f"i{i}", "resources": r} for i, r in enumerate(init)],
    }


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        pytest.param(spec({}), QOSClass.BEST_EFFORT, id="no-resources"),
        pytest.param(
            spec({"requests": {"ephemeral-storage": "1Gi"}}),
            QOSClass.BEST_EFFORT,
            id="only-non-qos-resources",
        ),
        pytest.param(spec(GUARANTEED, GUARANTEED), QOSClass.GUARANTEED, id="all-equal"),
        pytest.param(
            spec({"limits": {"cpu": "1", "memory": "1Gi"}}),
            QOSClass.GUARANTEED,
            id="limits-only-default-requests",
        ),
        pytest.param(spec({"requests": {"memory": "1Gi"}}), QOSClass.BURSTABLE, id="request-only"),
        pytest.param(
            spec({"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}),
            QOSClass.BURSTABLE,
            id="cpu-guaranteed-memory-unset",
        ),
        pytest.param(spec(GUARANTEED, {}), QOSClass.BURSTABLE, id="guaranteed-plus-besteffort"),
        pytest.param(
            spec(GUARANTEED, init=({"requests": {"memory": "1Gi"}},)),
            QOSClass.BURSTABLE,
            id="burstable-init-container-counts",
        ),
        pytest.param(
            spec({}, init=(GUARANTEED,)), QOSClass.BURSTABLE, id="guaranteed-init-besteffort-main"
        ),
        pytest.param(
            {**spec({}), "resources": GUARANTEED}, QOSClass.GUARANTEED, id="pod-level-resources-win"
        ),
        pytest.param(
            {**spec(GUARANTEED), "resources": {"requests": {"memory": "1Gi"}}},
            QOSClass.BURSTABLE,
            id="pod-level-burstable",
        ),
    ],
)
def test_compute_pod_qos(pod_spec: dict[str, Any], expected: QOSClass) -> None:
    """ComputePodQOS over init and regular containers, or the pod-level resources."""
    assert compute_pod_qos(pod_spec) is expected


def test_stored_qos_class_wins_over_the_spec() -> None:
    """GetPodQOS: status.qosClass, once set by the API server, is what kubelet uses."""
    pod = {"spec": spec({}), "status": {"qosClass": "Burstable"}}
    assert pod_qos(pod) is QOSClass.BURSTABLE


def test_garbage_stored_qos_class_is_ignored() -> None:
    """An unknown status.qosClass falls back to computing the class."""
    assert (
        pod_qos({"spec": spec(GUARANTEED), "status": {"qosClass": "Gold"}}) is QOSClass.GUARANTEED
    )


@pytest.mark.parametrize(
    ("metadata", "priority", "reason"),
    [
        ({}, None, None),
        ({"annotations": {"kubernetes.io/config.source": "file"}}, None, "static pod"),
        ({"annotations": {"kubernetes.io/config.source": "http"}}, None, "static pod"),
        ({"annotations": {"kubernetes.io/config.source": "api"}}, None, None),
        ({"annotations": {"kubernetes.io/config.mirror": "x"}}, None, "mirror pod"),
        ({}, 2000000000, "priority 2000000000 >= 2000000000"),
        ({}, 2000001000, "priority 2000001000 >= 2000000000"),
        ({}, 1999999999, None),
        ({}, True, None),
    ],
)
def test_critical_pods(metadata: dict[str, Any], priority: object, reason: str | None) -> None:
    """IsCriticalPod: static, mirror, or priority >= 2000000000."""
    pod = {"metadata": metadata, "spec": {} if priority is None else {"priority": priority}}
    assert critical_reason(pod) == reason


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("containerd://" + "a" * 64, "a" * 64),
        ("cri-o://" + "0123456789ab", "0123456789ab"),
        ("docker://" + "f" * 64, "f" * 64),
        ("containerd://../../system.slice", None),
        ("containerd://" + "a" * 63 + "/", None),
        ("containerd://" + "A" * 64, None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_runtime_ids_are_hex_or_nothing(raw: object, expected: str | None) -> None:
    """Container IDs from the API are untrusted: anything but a hex ID is dropped."""
    assert runtime_id(raw) == expected


def test_pod_view_lists_init_regular_and_ephemeral_containers_with_their_ids() -> None:
    """Every container kind is audited; IDs come from the matching status list."""
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u-1",
            "annotations": {"kubernetes.io/config.mirror": "hash1"},
        },
        "spec": {
            "initContainers": [{"name": "init", "resources": {"limits": {"memory": "64Mi"}}}],
            "containers": [{"name": "main", "resources": {"requests": {"memory": "1.5Gi"}}}],
            "ephemeralContainers": [{"name": "debug"}],
        },
        "status": {
            "initContainerStatuses": [{"name": "init", "containerID": "containerd://" + "1" * 64}],
            "containerStatuses": [{"name": "main", "containerID": "containerd://" + "2" * 64}],
            "ephemeralContainerStatuses": [{"name": "debug"}],
        },
    }
    view = pod_view(pod)
    assert view.cgroup_uids == {"u-1", "hash1"}
    assert [(c.name, c.kind, c.container_id) for c in view.containers] == [
        ("init", ContainerKind.INIT, "1" * 64),
        ("main", ContainerKind.REGULAR, "2" * 64),
        ("debug", ContainerKind.EPHEMERAL, None),
    ]
    init, main, _ = view.containers
    assert (init.memory_request, init.memory_limit, init.request_equals_limit) == (
        64 * 2**20,
        64 * 2**20,
        True,
    )
    assert (main.memory_request, main.memory_limit) == (1610612736, 0)


def test_unparseable_quantities_count_as_unset() -> None:
    """A garbled quantity never crashes the audit; it is treated as not set."""
    view = pod_view(
        {
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "resources": {"requests": {"memory": "lots"}, "limits": {"memory": "1Gi"}},
                    }
                ]
            }
        }
    )
    assert view.containers[0].memory_request == 2**30  # defaulted from the valid limit
