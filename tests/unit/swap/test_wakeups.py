"""Which pod events wake the swap audit: only those that change what it reads."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.swap.pods import pod_view
from agent.swap.wakeups import AuditInputs
from tests.harness.cgroups import container_id

UID = "00000000-0000-4000-8000-000000000001"


def _pod() -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": UID},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"memory": "1Gi"}, "limits": {}}}
            ]
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "c", "ready": True, "containerID": f"cri-o://{container_id(1)}"}
            ],
        },
    }


def _ready_false() -> dict[str, Any]:
    pod = _pod()
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod["status"]["containerStatuses"][0]["ready"] = False
    return pod


def _restarted() -> dict[str, Any]:
    pod = _pod()
    pod["status"]["containerStatuses"][0]["containerID"] = f"cri-o://{container_id(2)}"
    return pod


def _resized() -> dict[str, Any]:
    pod = _pod()
    pod["status"]["containerStatuses"][0]["allocatedResources"] = {"memory": "2Gi"}
    return pod


def _terminating() -> dict[str, Any]:
    pod = _pod()
    pod["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    pod["metadata"]["resourceVersion"] = "99"
    return pod


@pytest.mark.parametrize(
    ("kind", "obj", "wakes"),
    [
        pytest.param("MODIFIED", _ready_false(), False, id="ready-flip-does-not-wake"),
        pytest.param("MODIFIED", _terminating(), False, id="deletion-timestamp-does-not-wake"),
        pytest.param("MODIFIED", _restarted(), True, id="new-container-id-wakes"),
        pytest.param("MODIFIED", _resized(), True, id="memory-resize-wakes"),
        pytest.param("DELETED", _pod(), True, id="pod-gone-wakes"),
        pytest.param("SYNCED", None, True, id="relist-wakes"),
        pytest.param("MODIFIED", {"kind": "Node", "metadata": {"name": "n"}}, False, id="node"),
    ],
)
def test_event_after_an_audit(kind: str, obj: dict[str, Any] | None, wakes: bool) -> None:
    """After an audit read the pod, only a change to its audit view (or the pod going, or a
    relist) calls for another audit at once; status noise waits for the timer."""
    inputs = AuditInputs()
    inputs.remember([_pod()])
    assert inputs.changed(kind, obj) is wakes


def _pending() -> dict[str, Any]:
    pod = _pod()
    pod["metadata"]["uid"] = "00000000-0000-4000-8000-000000000002"
    pod["status"] = {"phase": "Pending"}
    return pod


@pytest.mark.parametrize(
    ("kind", "obj", "wakes"),
    [
        pytest.param("ADDED", _pending(), False, id="pending-pod-added"),
        pytest.param("DELETED", _pending(), False, id="pod-that-never-ran-deleted"),
        pytest.param("ADDED", _pod(), True, id="running-pod-added"),
    ],
)
def test_pods_without_a_running_container_have_nothing_to_audit(
    kind: str, obj: dict[str, Any], wakes: bool
) -> None:
    """A pod whose containers have no runtime ID has no cgroup yet: its coming and going
    waits for the timer; a pod that runs wakes the audit when it comes."""
    inputs = AuditInputs()
    inputs.remember([])
    assert inputs.changed(kind, obj) is wakes


def test_a_new_pod_wakes_once_then_its_noise_does_not() -> None:
    """A pod the last audit did not read wakes it; its next status-only update does not."""
    inputs = AuditInputs()
    inputs.remember([])
    assert inputs.changed("ADDED", _pod()) is True
    assert inputs.changed("MODIFIED", _ready_false()) is False
    again = copy.deepcopy(_pod())
    assert inputs.changed("MODIFIED", again) is False


def test_an_audit_recomputes_views_only_for_pods_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reflector replaces a changed pod's object, so an audit reuses the view of every
    object it saw before: a full node's views are not rebuilt on the event loop per audit."""
    computed: list[str] = []

    def counting(pod: dict[str, Any]) -> Any:
        computed.append(pod["metadata"]["uid"])
        return pod_view(pod)

    first, second = _pod(), _pending()
    inputs = AuditInputs()
    inputs.remember([first, second])
    monkeypatch.setattr("agent.swap.wakeups.pod_view", counting)
    replaced = _ready_false()
    inputs.changed("MODIFIED", replaced)
    inputs.remember([replaced, second])
    assert computed == [UID]
