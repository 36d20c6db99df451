"""The shared object builders (``tests/harness/kubeobjects.py``): their defaults are the
plainest valid objects, and every argument fills a field the API schema knows."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness import kubeobjects as k

JSON = dict[str, Any]


def _validate(obj: JSON) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is in the test extras"
    )
    kubernetes_validate.validate(obj, kubernetes_validate.latest_version(), strict=True)


@pytest.mark.parametrize(
    "built",
    [
        pytest.param(k.pod("p"), id="pod"),
        pytest.param(k.node("n"), id="node"),
        pytest.param(k.pdb("b"), id="pdb"),
        pytest.param(k.daemon_set("d"), id="daemon-set"),
        pytest.param(k.namespace("ns"), id="namespace"),
        pytest.param(k.priority_class("high", 1000), id="priority-class"),
        pytest.param(k.csinode("n", ["csi.example"]), id="csinode"),
        pytest.param(k.crd("example.com", "Widget", "widgets"), id="crd"),
    ],
)
def test_every_default_object_is_valid_against_the_api_schema(built: JSON) -> None:
    """Each builder's output, with nothing but a name, passes the 1.37 schema (strict)."""
    _validate(built)


def test_a_default_pod_is_its_name_namespace_and_one_container() -> None:
    """No uid, labels, status or empty lists appear unless asked for."""
    assert k.pod("p") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": k.IMAGE}]},
    }
    assert k.node("n") == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": {},
    }


def test_a_pod_with_every_argument_is_valid_and_fills_each_field() -> None:
    """Every keyword argument lands in the field it names, and the result is still valid."""
    built = k.pod(
        "web-0",
        "node-a",
        namespace="shop",
        uid="uid-1",
        labels={"app": "web"},
        annotations={"a": "b"},
        owner=k.owner_ref("ReplicaSet", "web-7d9f", block_owner_deletion=True),
        created="2026-01-01T00:00:00Z",
        deleting=True,
        finalizers=["example.com/hold"],
        containers=["app", k.container("side", "proxy:2", requests={"ephemeral-storage": "1Gi"})],
        cpu="100m",
        memory="256Mi",
        limits={"memory": "512Mi"},
        resources={"requests": {"cpu": "1"}},
        priority=10,
        priority_class="high",
        grace_seconds=5,
        volumes=[{"name": "data", "emptyDir": {}}],
        tolerations=[{"operator": "Exists"}],
        node_selector={"zone": "a"},
        affinity={"nodeAffinity": {}},
        topology_spread=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        phase="Running",
        ready=False,
        scheduled=True,
        conditions=[k.condition("Initialized")],
        container_statuses=[
            k.container_status(
                "app",
                container_id="containerd://1",
                fields={"image": k.IMAGE, "imageID": "", "restartCount": 0},
            )
        ],
        start_time="2026-01-01T00:00:05Z",
        metadata={"generateName": "web-"},
        spec={"restartPolicy": "Always"},
        status={"qosClass": "Burstable"},
    )
    _validate(built)
    metadata, spec, status = built["metadata"], built["spec"], built["status"]
    assert metadata["deletionTimestamp"] == k.DELETED
    assert metadata["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web-7d9f",
            "uid": "uid-ReplicaSet-web-7d9f",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert spec["containers"] == [
        {
            "name": "app",
            "image": k.IMAGE,
            "resources": {
                "requests": {"cpu": "100m", "memory": "256Mi"},
                "limits": {"memory": "512Mi"},
            },
        },
        {
            "name": "side",
            "image": "proxy:2",
            "resources": {"requests": {"ephemeral-storage": "1Gi"}},
        },
    ]
    assert (spec["nodeName"], spec["priority"], spec["terminationGracePeriodSeconds"]) == (
        "node-a",
        10,
        5,
    )
    assert [c["type"] for c in status["conditions"]] == ["PodScheduled", "Ready", "Initialized"]
    assert status["conditions"][1]["reason"] == "ContainersNotReady"
    assert (status["phase"], status["qosClass"]) == ("Running", "Burstable")


def test_zero_is_a_value_not_an_absence() -> None:
    """Priority 0 and a grace period of 0 are written; None leaves the field out."""
    spec = k.pod("p", priority=0, grace_seconds=0)["spec"]
    assert (spec["priority"], spec["terminationGracePeriodSeconds"]) == (0, 0)
    assert "priority" not in k.pod("p")["spec"]


def test_a_node_with_every_argument_is_valid() -> None:
    """Taints, cordon, readiness, allocatable and images land where a kubelet puts them."""
    built = k.node(
        "node-a",
        uid="uid-node-a",
        labels={"zone": "a"},
        annotations={"a": "b"},
        created="2026-01-01T00:00:00Z",
        resource_version="7",
        taints=[k.taint("dedicated", "NoExecute", "edge")],
        unschedulable=True,
        ready=False,
        cpu="4",
        memory="16Gi",
        pods="110",
        images={"app:1": 1000},
        status={"capacity": {"cpu": "4"}},
    )
    _validate(built)
    assert built["spec"] == {
        "taints": [{"key": "dedicated", "effect": "NoExecute", "value": "edge"}],
        "unschedulable": True,
    }
    assert built["status"]["conditions"] == [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}
    ]
    assert built["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}


def test_a_controller_reference_names_its_owner_as_stored() -> None:
    """``controller_ref`` copies the owner's apiVersion, kind, name and uid."""
    owner = k.daemon_set("cni", namespace="kube-system", uid="uid-ds")
    assert k.controller_ref(owner) == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "cni",
        "uid": "uid-ds",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    _validate(k.pod("cni-x", owner=k.controller_ref(owner)))


def test_a_budget_and_a_daemon_set_with_their_arguments_are_valid() -> None:
    """The PDB's policy fields and status, the DaemonSet's template fields, are schema-valid."""
    budget = k.pdb(
        "web",
        namespace="shop",
        match_labels={"app": "web"},
        max_unavailable=1,
        unhealthy_pod_eviction_policy="AlwaysAllow",
        disruptions_allowed=1,
    )
    _validate(budget)
    assert budget["status"] == {"disruptionsAllowed": 1}
    daemons = k.daemon_set(
        "cni",
        tolerations=[{"operator": "Exists"}],
        node_selector={"pool": "x"},
        affinity={"nodeAffinity": {}},
        host_network=True,
        node="node-a",
    )
    _validate(daemons)
    assert daemons["spec"]["template"]["spec"]["hostNetwork"] is True


def test_a_built_object_shares_no_list_entry_with_its_arguments() -> None:
    """Changing a built pod's toleration leaves the constant it was built from alone."""
    built = k.pod("p", tolerations=k.DEFAULT_TOLERATIONS)
    built["spec"]["tolerations"][0]["tolerationSeconds"] = 1
    assert k.DEFAULT_TOLERATIONS[0]["tolerationSeconds"] == 300
