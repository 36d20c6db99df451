"""Pod graceful deletion on the fake API server and the fake kubelet that completes it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.fake_apiserver.objects import epoch_of
from tests.harness.kubeobjects import pod

JSON = dict[str, Any]
NODE = "node-a"


def delete_raw(core: client.CoreV1Api, name: str, grace: int | None = None) -> JSON:
    """DELETE a pod in default and return the raw response body."""
    response = core.delete_namespaced_pod(
        name, "default", grace_period_seconds=grace, _preload_content=False
    )
    body: JSON = json.loads(response.data)
    return body


def test_graceful_delete_keeps_the_pod_until_the_kubelet_removes_it(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A bound pod gets deletionTimestamp + grace and disappears only when its kubelet acts."""
    kubelet = fake_apiserver.kubelet(NODE, time_scale=0.01)
    core.create_namespaced_pod("default", pod("p", node=NODE, grace_seconds=20))
    deleted = delete_raw(core, "p")
    assert deleted["kind"] == "Pod"
    assert deleted["metadata"]["deletionGracePeriodSeconds"] == 20
    deadline = epoch_of(deleted["metadata"]["deletionTimestamp"])
    created = epoch_of(deleted["metadata"]["creationTimestamp"])
    assert 15 <= deadline - created <= 25  # deletionTimestamp is when the grace ends
    assert kubelet.wait_removed("default", "p", timeout=5)
    assert kubelet.removed_at("default", "p") is not None
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("p", "default")
    assert exc.value.status == 404


def test_default_grace_period_is_thirty_seconds(core: client.CoreV1Api) -> None:
    """Pods are defaulted to terminationGracePeriodSeconds=30, which a plain delete uses."""
    created = core.create_namespaced_pod("default", pod("p", node=NODE))
    assert created.spec.termination_grace_period_seconds == 30
    assert delete_raw(core, "p")["metadata"]["deletionGracePeriodSeconds"] == 30


def test_second_delete_may_shorten_but_not_lengthen_the_grace(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A repeated DELETE may shorten the grace (deadline moves earlier), never lengthen it."""
    core.create_namespaced_pod("default", pod("p", node=NODE))
    first = delete_raw(core, "p", grace=20)["metadata"]
    longer = delete_raw(core, "p", grace=60)["metadata"]
    assert longer["deletionGracePeriodSeconds"] == 20
    assert longer["resourceVersion"] == first["resourceVersion"]
    shorter = delete_raw(core, "p", grace=5)["metadata"]
    assert shorter["deletionGracePeriodSeconds"] == 5
    moved = epoch_of(first["deletionTimestamp"]) - epoch_of(shorter["deletionTimestamp"])
    assert 14 <= moved <= 16
    assert fake_apiserver.exists("pods", "p", "default")


@pytest.mark.parametrize("case", ["grace-zero", "unbound", "succeeded"])
def test_pods_that_need_no_kubelet_are_removed_at_once(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api, case: str
) -> None:
    """Grace 0, unscheduled pods and finished pods are deleted immediately."""
    node = None if case == "unbound" else NODE
    fake_apiserver.create(pod("p", node=node))
    if case == "succeeded":
        fake_apiserver.patch(
            "pods", "p", {"status": {"phase": "Succeeded"}}, "default", subresource="status"
        )
    delete_raw(core, "p", grace=0 if case == "grace-zero" else None)
    assert not fake_apiserver.exists("pods", "p", "default")


def test_immediate_pod_delete_is_seen_as_modified_then_deleted(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Like the real store, a grace-0 pod delete persists the deletion mark before removing."""
    core.create_namespaced_pod("default", pod("p", node=NODE))
    rv = fake_apiserver.resource_version
    delete_raw(core, "p", grace=0)
    watcher = watch.Watch()
    events = []
    for event in watcher.stream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5
    ):
        events.append(event)
        if len(events) == 2:
            watcher.stop()
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0]["raw_object"]["metadata"]["deletionGracePeriodSeconds"] == 0


def test_stuck_pods_stay_terminating_until_unstuck(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """kubelet.stick() keeps a terminating pod; unstick() lets the kubelet finish it."""
    kubelet = fake_apiserver.kubelet(NODE, time_scale=0.001)
    core.create_namespaced_pod("default", pod("stuck", node=NODE))
    core.create_namespaced_pod("default", pod("free", node=NODE))
    kubelet.stick("default", "stuck")
    delete_raw(core, "stuck", grace=1)
    delete_raw(core, "free", grace=1)
    assert kubelet.wait_removed("default", "free", timeout=5)
    # "stuck" was deleted first, with the same grace: the kubelet's pass that finished "free"
    # found it due as well, and kept it.
    assert kubelet.removed_at("default", "stuck") is None
    assert core.read_namespaced_pod("stuck", "default").metadata.deletion_timestamp is not None
    kubelet.unstick("default", "stuck")
    assert kubelet.wait_removed("default", "stuck", timeout=5)


def test_pod_finalizers_outlive_the_kubelet(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A terminated pod with finalizers stays (grace 0) until its finalizers are removed."""
    kubelet = fake_apiserver.kubelet(NODE, time_scale=0.001)
    core.create_namespaced_pod("default", pod("p", node=NODE, finalizers=["example.com/keep"]))
    delete_raw(core, "p", grace=1)
    kept = fake_apiserver.wait_for(
        "pods",
        "p",
        lambda obj: obj is not None and obj["metadata"]["deletionGracePeriodSeconds"] == 0,
        "default",
        timeout=5,
    )
    assert kept is not None
    core.patch_namespaced_pod("p", "default", {"metadata": {"finalizers": None}})
    assert kubelet.wait_removed("default", "p", timeout=5)


def test_set_ready_reports_conditions_and_stable_container_ids(
    fake_apiserver: FakeApiServer,
) -> None:
    """set_ready writes Running, Ready/ContainersReady and containerd IDs stable per container."""
    kubelet = fake_apiserver.kubelet(NODE)
    fake_apiserver.create(pod("p", node=NODE, containers=("app", "sidecar")))
    ready = kubelet.set_ready("default", "p")
    conditions = {c["type"]: c["status"] for c in ready["status"]["conditions"]}
    assert ready["status"]["phase"] == "Running"
    assert conditions["Ready"] == conditions["ContainersReady"] == "True"
    ids = [s["containerID"] for s in ready["status"]["containerStatuses"]]
    assert all(re.fullmatch(r"containerd://[0-9a-f]{64}", i) for i in ids)
    assert len(set(ids)) == 2
    unready = kubelet.set_ready("default", "p", ready=False)
    assert {c["type"]: c["status"] for c in unready["status"]["conditions"]}["Ready"] == "False"
    assert [s["containerID"] for s in unready["status"]["containerStatuses"]] == ids
    assert not any(s["ready"] for s in unready["status"]["containerStatuses"])


def test_kubelet_registers_its_node_and_auto_readies_new_pods(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """kubelet(node, auto_ready=True) creates a Ready node and readies pods landing on it."""
    fake_apiserver.kubelet(NODE, auto_ready=True)
    node = core.read_node(NODE)
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"
    core.create_namespaced_pod("default", pod("p", node=NODE))
    core.create_namespaced_pod("default", pod("other", node="node-b"))

    def is_ready(obj: JSON | None) -> bool:
        conditions = ((obj or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    fake_apiserver.wait_for("pods", "p", is_ready, "default", timeout=5)
    assert core.read_namespaced_pod("other", "default").status.phase == "Pending"


def test_set_phase_succeeded_terminates_containers(fake_apiserver: FakeApiServer) -> None:
    """set_phase('Succeeded') reports terminated containers and an unready pod."""
    kubelet = fake_apiserver.kubelet(NODE)
    fake_apiserver.create(pod("job", node=NODE))
    done = kubelet.set_phase("default", "job", "Succeeded")
    assert done["status"]["phase"] == "Succeeded"
    state = done["status"]["containerStatuses"][0]["state"]
    assert state["terminated"]["reason"] == "Completed"


def test_deleting_a_namespace_removes_its_objects(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Deleting a namespace removes what it holds; system namespaces cannot be deleted."""
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "cm"}})
    core.delete_namespace("team")
    assert fake_apiserver.list("configmaps", "team") == []
    with pytest.raises(ApiException) as exc:
        core.delete_namespace("default")
    assert exc.value.status == 403
