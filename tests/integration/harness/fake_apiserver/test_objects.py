"""The fake API server's object semantics, exercised through the official client over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import pod

JSON = dict[str, Any]


def status_of(exc: pytest.ExceptionInfo[ApiException]) -> JSON:
    """The `Status` body of a failed call."""
    body: JSON = json.loads(exc.value.body or "{}")
    return body


def raw_json(response: Any) -> JSON:
    """Read a `_preload_content=False` response as JSON."""
    data: JSON = json.loads(response.data)
    return data


@pytest.fixture
def node_a(fake_apiserver: FakeApiServer) -> str:
    """A node object named node-a."""
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}, "spec": {}}
    )
    return "node-a"


# --- basics ------------------------------------------------------------------------------------


def test_kubeconfig_lets_load_kube_config_reach_the_server(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """write_kubeconfig produces a kubeconfig the official loader accepts, with a bearer token."""
    path = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    api = config.new_client_from_config(config_file=str(path))
    with api:
        names = [ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    request = fake_apiserver.requests("GET", "/api/v1/namespaces")[-1]
    assert (request.header("Authorization") or "").startswith("Bearer ")


def test_create_sets_server_fields_and_resource_versions_increase(core: client.CoreV1Api) -> None:
    """Creates set uid, RFC 3339 creationTimestamp, generation and a growing resourceVersion."""
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "one"}})
    second = core.create_namespaced_pod("default", pod("two"))
    assert first.metadata.uid
    assert second.metadata.uid
    assert first.metadata.uid != second.metadata.uid
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    assert second.metadata.generation == 1
    raw = raw_json(core.read_namespaced_pod("two", "default", _preload_content=False))
    assert raw["metadata"]["creationTimestamp"].endswith("Z")
    assert raw["kind"] == "Pod"
    assert raw["apiVersion"] == "v1"


def test_generate_name_appends_a_random_suffix(core: client.CoreV1Api) -> None:
    """generateName yields a unique name with a 5-character suffix."""
    created = core.create_namespaced_config_map("default", {"metadata": {"generateName": "cm-"}})
    assert created.metadata.name.startswith("cm-")
    assert len(created.metadata.name) == len("cm-") + 5


def test_create_twice_is_already_exists(core: client.CoreV1Api) -> None:
    """A second create of the same name is 409 AlreadyExists."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
    assert exc.value.status == 409
    assert status_of(exc)["reason"] == "AlreadyExists"
    assert status_of(exc)["message"] == 'configmaps "dup" already exists'


def test_create_in_missing_namespace_is_not_found(core: client.CoreV1Api) -> None:
    """A namespaced create in a namespace that does not exist is 404 for the namespace."""
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("nowhere", {"metadata": {"name": "x"}})
    assert exc.value.status == 404
    assert status_of(exc)["message"] == 'namespaces "nowhere" not found'
    assert status_of(exc)["kind"] == "Status"


def test_get_missing_object_is_not_found_status(core: client.CoreV1Api) -> None:
    """Reading a missing object is 404 with a NotFound Status naming the resource."""
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("ghost", "default")
    body = status_of(exc)
    assert exc.value.status == 404
    assert body["reason"] == "NotFound"
    assert body["details"] == {"name": "ghost", "kind": "pods"}


def test_list_raw_json_has_list_kind_and_items_without_kind(core: client.CoreV1Api) -> None:
    """LIST answers {kind: PodList, metadata.resourceVersion, items} with bare items."""
    core.create_namespaced_pod("default", pod("a"))
    raw = raw_json(core.list_namespaced_pod("default", _preload_content=False))
    assert raw["kind"] == "PodList"
    assert raw["apiVersion"] == "v1"
    assert int(raw["metadata"]["resourceVersion"]) >= 1
    assert [i["metadata"]["name"] for i in raw["items"]] == ["a"]
    assert "kind" not in raw["items"][0]


def test_list_pagination_with_limit_and_continue(core: client.CoreV1Api) -> None:
    """limit/continue pages through objects in name order and ends without a token."""
    for name in ("c", "a", "d", "b", "e"):
        core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    pages: list[list[str]] = []
    token = None
    while True:
        page = core.list_namespaced_config_map("default", limit=2, _continue=token)
        pages.append([i.metadata.name for i in page.items])
        token = page.metadata._continue
        if not token:
            break
    assert pages == [["a", "b"], ["c", "d"], ["e"]]


def test_list_accepts_resource_version_zero(core: client.CoreV1Api) -> None:
    """resourceVersion=0 on a list is accepted (served from the current state)."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "rv0"}})
    items = core.list_namespaced_config_map("default", resource_version="0").items
    assert [i.metadata.name for i in items] == ["rv0"]


def test_discovery_and_version_endpoints(fake_api_client: client.ApiClient) -> None:
    """/version, /api, /apis and group-version resource lists answer like the real server."""
    version = client.VersionApi(fake_api_client).get_code()
    assert version.git_version.startswith("v1.")
    groups = client.ApisApi(fake_api_client).get_api_versions()
    assert {"apps", "policy", "apiextensions.k8s.io"} <= {g.name for g in groups.groups}
    resources = client.AppsV1Api(fake_api_client).get_api_resources()
    names = {r.name for r in resources.resources}
    assert {"daemonsets", "daemonsets/status", "deployments"} <= names


# --- optimistic concurrency --------------------------------------------------------------------


def test_update_with_stale_resource_version_is_conflict(core: client.CoreV1Api) -> None:
    """A PUT carrying an outdated metadata.resourceVersion is 409 Conflict."""
    stale = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    fresh = core.read_namespaced_config_map("cm", "default")
    fresh.data = {"k": "1"}
    core.replace_namespaced_config_map("cm", "default", fresh)
    stale.data = {"k": "2"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("cm", "default", stale)
    assert exc.value.status == 409
    assert status_of(exc)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(exc)["message"]


def test_update_without_resource_version_is_unconditional(core: client.CoreV1Api) -> None:
    """A PUT without metadata.resourceVersion overwrites whatever is stored."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"k": "0"}})
    core.patch_namespaced_config_map("cm", "default", {"data": {"k": "1"}})
    replaced = core.replace_namespaced_config_map(
        "cm", "default", {"metadata": {"name": "cm"}, "data": {"k": "2"}}
    )
    assert replaced.data == {"k": "2"}


def test_strategic_patch_with_stale_resource_version_is_conflict(
    core: client.CoreV1Api, node_a: str
) -> None:
    """A strategic merge patch carrying an old metadata.resourceVersion is 409 Conflict."""
    old_rv = core.read_node(node_a).metadata.resource_version
    core.patch_node(node_a, {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ApiException) as exc:
        core.patch_node(node_a, {"metadata": {"resourceVersion": old_rv, "labels": {"x": "2"}}})
    assert exc.value.status == 409
    assert core.read_node(node_a).metadata.labels["x"] == "1"


def test_noop_patch_keeps_the_resource_version(core: client.CoreV1Api, node_a: str) -> None:
    """A patch that changes nothing is not written: same resourceVersion."""
    before = core.patch_node(node_a, {"metadata": {"labels": {"x": "1"}}})
    after = core.patch_node(node_a, {"metadata": {"labels": {"x": "1"}}})
    assert after.metadata.resource_version == before.metadata.resource_version


# --- patches -----------------------------------------------------------------------------------


TAINT_A = {"key": "a", "value": "1", "effect": "NoSchedule"}
TAINT_B = {"key": "b", "effect": "NoExecute"}


def test_json_patch_adds_replaces_and_removes_taints(core: client.CoreV1Api, node_a: str) -> None:
    """JSON patch add/replace/remove operations on /spec/taints apply in order."""
    core.patch_node(node_a, [{"op": "add", "path": "/spec/taints", "value": [TAINT_A]}])
    core.patch_node(node_a, [{"op": "add", "path": "/spec/taints/-", "value": TAINT_B}])
    node = core.patch_node(
        node_a, [{"op": "replace", "path": "/spec/taints/0/value", "value": "2"}]
    )
    assert [(t.key, t.value) for t in node.spec.taints] == [("a", "2"), ("b", None)]
    node = core.patch_node(node_a, [{"op": "remove", "path": "/spec/taints/0"}])
    assert [t.key for t in node.spec.taints] == ["b"]


def test_failed_json_patch_test_op_is_invalid(core: client.CoreV1Api, node_a: str) -> None:
    """A JSON patch whose `test` op fails is 422 Invalid and changes nothing."""
    core.patch_node(node_a, [{"op": "add", "path": "/spec/taints", "value": [TAINT_A]}])
    before = core.read_node(node_a).metadata.resource_version
    with pytest.raises(ApiException) as exc:
        core.patch_node(
            node_a,
            [
                {"op": "test", "path": "/spec/taints/0/key", "value": "other"},
                {"op": "remove", "path": "/spec/taints/0"},
            ],
        )
    assert exc.value.status == 422
    body = status_of(exc)
    assert body["kind"] == "Status"
    assert body["reason"] == "Invalid"
    assert core.read_node(node_a).metadata.resource_version == before


def test_json_patch_test_op_guards_a_resource_version(core: client.CoreV1Api, node_a: str) -> None:
    """A `test` op on metadata.resourceVersion makes a JSON patch conditional."""
    current = core.read_node(node_a).metadata.resource_version
    patched = core.patch_node(
        node_a,
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": current},
            {"op": "add", "path": "/metadata/labels", "value": {"guarded": "yes"}},
        ],
    )
    assert patched.metadata.labels == {"guarded": "yes"}


def test_strategic_merge_replaces_taints_atomically(core: client.CoreV1Api, node_a: str) -> None:
    """spec.taints is an atomic list: a strategic merge patch replaces it whole."""
    core.patch_node(node_a, {"spec": {"taints": [TAINT_A, TAINT_B]}})
    node = core.patch_node(node_a, {"spec": {"taints": [TAINT_B]}})
    assert [t.key for t in node.spec.taints] == ["b"]


def test_strategic_merge_merges_conditions_by_type(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """status.conditions merge by `type`: patching one condition keeps the others."""
    fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "MemoryPressure", "status": "False"},
                ]
            },
        }
    )
    node = core.patch_node_status(
        "n", {"status": {"conditions": [{"type": "MemoryPressure", "status": "True"}]}}
    )
    assert {c.type: c.status for c in node.status.conditions} == {
        "Ready": "True",
        "MemoryPressure": "True",
    }


def test_strategic_merge_finalizers_are_a_set_and_null_deletes(
    core: client.CoreV1Api, node_a: str
) -> None:
    """metadata.finalizers merge as a set; a null value deletes a key."""
    core.patch_node(node_a, {"metadata": {"finalizers": ["a/x"], "labels": {"k": "v", "z": "1"}}})
    node = core.patch_node(
        node_a, {"metadata": {"finalizers": ["a/x", "b/y"], "labels": {"z": None}}}
    )
    assert node.metadata.finalizers == ["a/x", "b/y"]
    assert node.metadata.labels == {"k": "v"}


def test_strategic_merge_merges_containers_by_name(core: client.CoreV1Api) -> None:
    """spec.containers merge by name: patching one container's image keeps the other."""
    core.create_namespaced_pod("default", pod("p", containers=("a", "b")))
    patched = core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "b", "image": "new:2"}]}}
    )
    assert [(c.name, c.image) for c in patched.spec.containers] == [
        ("a", "registry.example/app:1.0"),
        ("b", "new:2"),
    ]


def test_merge_patch_replaces_lists(core: client.CoreV1Api, node_a: str) -> None:
    """A JSON merge patch replaces lists and deletes keys set to null."""
    core.patch_node(node_a, {"spec": {"taints": [TAINT_A, TAINT_B]}})
    node = core.patch_node(
        node_a,
        {"spec": {"taints": [TAINT_A]}, "metadata": {"labels": None}},
        _content_type="application/merge-patch+json",
    )
    assert [t.key for t in node.spec.taints] == ["a"]


def test_pod_spec_update_outside_the_allowed_fields_is_invalid(core: client.CoreV1Api) -> None:
    """Changing an immutable pod spec field is 422, like the real pod validation."""
    core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_pod("p", "default", {"spec": {"restartPolicy": "Never"}})
    assert exc.value.status == 422
    assert "pod updates may not change fields" in status_of(exc)["message"]


# --- status subresource and generation ---------------------------------------------------------


def test_main_endpoint_ignores_status_and_status_endpoint_ignores_spec(
    core: client.CoreV1Api,
) -> None:
    """The main endpoint drops status changes; the status endpoint drops everything else."""
    core.create_namespaced_pod("default", pod("p"))
    after_main = core.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"l": "1"}}, "status": {"phase": "Running"}}
    )
    assert after_main.status.phase == "Pending"
    assert after_main.metadata.labels == {"l": "1"}
    after_status = core.patch_namespaced_pod_status(
        "p", "default", {"metadata": {"labels": {"l": "2"}}, "status": {"phase": "Running"}}
    )
    assert after_status.status.phase == "Running"
    assert after_status.metadata.labels == {"l": "1"}


def test_create_through_http_drops_a_daemonset_status(fake_api_client: client.ApiClient) -> None:
    """POST resets a daemonset's status to zeros; only spec changes bump metadata.generation."""
    apps = client.AppsV1Api(fake_api_client)
    body = {
        "metadata": {"name": "ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "ds"}},
            "template": {
                "metadata": {"labels": {"app": "ds"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
        "status": {
            "currentNumberScheduled": 5,
            "desiredNumberScheduled": 5,
            "numberMisscheduled": 0,
            "numberReady": 5,
        },
    }
    created = apps.create_namespaced_daemon_set("kube-system", body)
    assert (created.status.current_number_scheduled, created.status.number_ready) == (0, 0)
    assert created.metadata.generation == 1
    relabelled = apps.patch_namespaced_daemon_set(
        "ds", "kube-system", {"metadata": {"labels": {"x": "y"}}}
    )
    assert relabelled.metadata.generation == 1
    changed = apps.patch_namespaced_daemon_set(
        "ds", "kube-system", {"spec": {"minReadySeconds": 5}}
    )
    assert changed.metadata.generation == 2
    status = apps.patch_namespaced_daemon_set_status(
        "ds",
        "kube-system",
        {
            "status": {
                "numberReady": 3,
                "desiredNumberScheduled": 3,
                "currentNumberScheduled": 3,
                "numberMisscheduled": 0,
            }
        },
    )
    assert status.status.number_ready == 3
    assert status.metadata.generation == 2


# --- deletes -----------------------------------------------------------------------------------


def test_delete_of_a_configmap_answers_a_success_status(core: client.CoreV1Api) -> None:
    """Deleting a non-pod object removes it at once and answers a Success Status."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    response = raw_json(core.delete_namespaced_config_map("cm", "default", _preload_content=False))
    assert response["kind"] == "Status"
    assert response["status"] == "Success"
    assert response["details"]["name"] == "cm"
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("cm", "default")
    assert exc.value.status == 404


def test_finalizers_keep_a_deleted_object_until_removed(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A delete marks an object with finalizers; removing the last finalizer removes it."""
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm", "finalizers": ["example.com/hold"]}}
    )
    kept = raw_json(core.delete_namespaced_config_map("cm", "default", _preload_content=False))
    assert kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["deletionGracePeriodSeconds"] == 0
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map(
            "cm", "default", {"metadata": {"finalizers": ["example.com/hold", "new/one"]}}
        )
    assert exc.value.status == 422
    core.patch_namespaced_config_map(
        "cm", "default", [{"op": "remove", "path": "/metadata/finalizers"}]
    )
    assert not fake_apiserver.exists("configmaps", "cm", "default")


def test_delete_preconditions_mismatch_is_conflict(core: client.CoreV1Api) -> None:
    """DeleteOptions preconditions on uid or resourceVersion that do not match are 409."""
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    for preconditions in (
        client.V1Preconditions(uid="not-the-uid"),
        client.V1Preconditions(resource_version="1"),
    ):
        with pytest.raises(ApiException) as exc:
            core.delete_namespaced_config_map(
                "cm", "default", body=client.V1DeleteOptions(preconditions=preconditions)
            )
        assert exc.value.status == 409
    core.delete_namespaced_config_map(
        "cm",
        "default",
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=cm.metadata.uid)),
    )


def test_dry_run_create_persists_nothing(core: client.CoreV1Api) -> None:
    """dryRun=All answers the would-be object without storing it."""
    result = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "dry"}}, dry_run="All"
    )
    assert result.metadata.name == "dry"
    assert core.list_namespaced_config_map("default").items == []


# --- priority admission ------------------------------------------------------------------------


def test_priority_class_name_resolves_to_priority(core: client.CoreV1Api) -> None:
    """priorityClassName is resolved to spec.priority; without one, priority is 0."""
    critical = core.create_namespaced_pod(
        "kube-system", pod("crit", namespace="kube-system", priority_class="system-node-critical")
    )
    plain = core.create_namespaced_pod("default", pod("plain"))
    assert critical.spec.priority == 2000001000
    assert critical.spec.preemption_policy == "PreemptLowerPriority"
    assert plain.spec.priority == 0


def test_global_default_priority_class_applies_to_pods_without_one(
    fake_api_client: client.ApiClient,
) -> None:
    """A globalDefault PriorityClass sets priority and priorityClassName of unlabelled pods."""
    scheduling = client.SchedulingV1Api(fake_api_client)
    scheduling.create_priority_class(
        {"metadata": {"name": "everyone"}, "value": 1000, "globalDefault": True}
    )
    created = client.CoreV1Api(fake_api_client).create_namespaced_pod("default", pod("p"))
    assert created.spec.priority == 1000
    assert created.spec.priority_class_name == "everyone"


def test_unknown_priority_class_is_forbidden(core: client.CoreV1Api) -> None:
    """A pod naming a missing PriorityClass is rejected with 403 like the admission plugin."""
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("default", pod("p", priority_class="nope"))
    assert exc.value.status == 403
    assert "no PriorityClass with name nope was found" in status_of(exc)["message"]


def test_system_priority_classes_exist(fake_api_client: client.ApiClient) -> None:
    """The two system priority classes are pre-created with their real values."""
    classes = client.SchedulingV1Api(fake_api_client).list_priority_class().items
    assert {c.metadata.name: c.value for c in classes} == {
        "system-cluster-critical": 2000000000,
        "system-node-critical": 2000001000,
    }
