"""Where the fake API server was checked against a real one: create defaults, nodes/status."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import pod

JSON = dict[str, Any]

NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


def _raw(response: Any) -> JSON:
    data: JSON = json.loads(response.data)
    return data


def test_a_node_created_without_spec_takes_a_guarded_json_patch_below_spec(
    core: client.CoreV1Api,
) -> None:
    """A Node POSTed without spec gets spec {} and status {}, so `add /spec/taints` is 200."""
    created = _raw(core.create_node({"metadata": {"name": "bare"}}, _preload_content=False))
    assert (created["spec"], created["status"]) == ({}, {})
    taint = {"key": "example.com/t", "effect": "NoSchedule"}
    patch = [
        {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": created["metadata"]["resourceVersion"],
        },
        {"op": "add", "path": "/spec/taints", "value": [taint]},
    ]
    patched = _raw(core.patch_node("bare", patch, _preload_content=False))
    assert patched["spec"]["taints"] == [taint]


def test_a_pod_without_a_priority_class_gets_priority_0_and_the_default_tolerations(
    core: client.CoreV1Api,
) -> None:
    """Pods get spec.priority 0 and tolerate not-ready/unreachable NoExecute for 300 s."""
    body = pod("web", node="node-a")
    created = _raw(core.create_namespaced_pod("default", body, _preload_content=False))
    assert created["spec"]["priority"] == 0
    assert created["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]


@pytest.mark.parametrize(
    ("given", "added"),
    [
        pytest.param(
            [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
            [UNREACHABLE],
            id="own-not-ready",
        ),
        pytest.param([{"operator": "Exists"}], [], id="tolerates-everything"),
        pytest.param(
            [
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
            [NOT_READY, UNREACHABLE],
            id="other-effect",
        ),
    ],
)
def test_default_tolerations_are_added_only_where_the_pod_has_none_of_its_own(
    core: client.CoreV1Api, given: list[JSON], added: list[JSON]
) -> None:
    """A pod's own NoExecute toleration for a key (or for every key) keeps the default out."""
    body = pod("web")
    body["spec"]["tolerations"] = given
    created = _raw(core.create_namespaced_pod("default", body, _preload_content=False))
    assert created["spec"]["tolerations"] == [*given, *added]


def test_a_put_of_node_status_applies_label_changes_but_not_spec_changes(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """nodes/status takes status and metadata (nodeStatusStrategy) but keeps the old spec."""
    fake_apiserver.create(
        {
            "metadata": {"name": "node-a", "labels": {"old": "1"}},
            "spec": {"podCIDR": "10.0.0.0/24"},
        },
        resource="nodes",
    )
    node = _raw(core.read_node("node-a", _preload_content=False))
    node["metadata"]["labels"] = {"new": "2"}
    node["spec"] = {"unschedulable": True}
    node["status"] = {"phase": "Running"}
    updated = _raw(core.replace_node_status("node-a", node, _preload_content=False))
    assert updated["metadata"]["labels"] == {"new": "2"}
    assert updated["spec"] == {"podCIDR": "10.0.0.0/24"}
    assert updated["status"] == {"phase": "Running"}
    assert fake_apiserver.get("nodes", "node-a")["metadata"]["labels"] == {"new": "2"}
