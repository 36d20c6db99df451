"""CustomResourceDefinitions and custom objects on the fake API server (CustomObjectsApi)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import crd

JSON = dict[str, Any]
GROUP = "example.com"


@pytest.fixture
def custom(fake_api_client: client.ApiClient) -> client.CustomObjectsApi:
    """CustomObjectsApi on the fake server."""
    return client.CustomObjectsApi(fake_api_client)


@pytest.fixture
def extensions(fake_api_client: client.ApiClient) -> client.ApiextensionsV1Api:
    """ApiextensionsV1Api on the fake server."""
    return client.ApiextensionsV1Api(fake_api_client)


def widget(name: str, size: int = 1) -> JSON:
    """A Widget custom object."""
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def test_namespaced_custom_objects_after_crd_registration(
    extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    """Creating a CRD serves /apis/<group>/<version>/namespaces/<ns>/<plural> at once."""
    with pytest.raises(ApiException) as before:
        custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert before.value.status == 404
    extensions.create_custom_resource_definition(crd(GROUP, "Widget", "widgets"))
    created = custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    assert created["metadata"]["generation"] == 1
    assert created["metadata"]["namespace"] == "default"
    fetched = custom.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
    assert fetched["spec"] == {"size": 1}
    assert fetched["kind"] == "Widget"
    listed = custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert listed["kind"] == "WidgetList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w"]
    patched = custom.patch_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", "w", {"spec": {"size": 3}}
    )
    assert patched["spec"] == {"size": 3}
    assert patched["metadata"]["generation"] == 2


def test_custom_status_subresource_is_isolated(
    extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    """With a status subresource, status writes go only through /status and skip generation."""
    extensions.create_custom_resource_definition(crd(GROUP, "Widget", "widgets"))
    body = {**widget("w"), "status": {"phase": "ignored-on-create"}}
    created = custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", body)
    assert "status" not in created
    custom.patch_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", "w", {"status": {"phase": "ignored"}}
    )
    updated = custom.patch_namespaced_custom_object_status(
        GROUP, "v1", "default", "widgets", "w", {"status": {"phase": "Ready"}, "spec": {"size": 9}}
    )
    assert updated["status"] == {"phase": "Ready"}
    assert updated["spec"] == {"size": 1}
    assert updated["metadata"]["generation"] == 1


def test_cluster_scoped_custom_objects(
    extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    """A Cluster-scoped CRD serves objects without a namespace (and no namespaced path)."""
    extensions.create_custom_resource_definition(
        crd(GROUP, "Gadget", "gadgets", scope="Cluster", status_subresource=False)
    )
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {}}
    created = custom.create_cluster_custom_object(GROUP, "v1", "gadgets", body)
    assert "namespace" not in created["metadata"]
    assert custom.get_cluster_custom_object(GROUP, "v1", "gadgets", "g")["metadata"]["name"] == "g"
    listed = custom.list_cluster_custom_object(GROUP, "v1", "gadgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g"]
    with pytest.raises(ApiException) as exc:
        custom.list_namespaced_custom_object(GROUP, "v1", "default", "gadgets")
    assert exc.value.status == 404


def test_custom_object_put_needs_a_resource_version(
    extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    """Custom resources refuse unconditional updates (422) and conflict on a stale version."""
    extensions.create_custom_resource_definition(crd(GROUP, "Widget", "widgets"))
    created = custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    with pytest.raises(ApiException) as missing:
        custom.replace_namespaced_custom_object(
            GROUP, "v1", "default", "widgets", "w", widget("w", 2)
        )
    assert missing.value.status == 422
    replaced = custom.replace_namespaced_custom_object(
        GROUP,
        "v1",
        "default",
        "widgets",
        "w",
        {**widget("w", 2), "metadata": created["metadata"]},
    )
    assert replaced["spec"] == {"size": 2}
    with pytest.raises(ApiException) as stale:
        custom.replace_namespaced_custom_object(
            GROUP,
            "v1",
            "default",
            "widgets",
            "w",
            {**widget("w", 3), "metadata": created["metadata"]},
        )
    assert stale.value.status == 409


def test_custom_objects_reject_strategic_merge_patch(
    fake_apiserver: FakeApiServer, extensions: client.ApiextensionsV1Api
) -> None:
    """Strategic merge patches on custom resources are 415, as the real server answers."""
    extensions.create_custom_resource_definition(crd(GROUP, "Widget", "widgets"))
    fake_apiserver.create(widget("w"))
    response = urllib3.PoolManager().request(
        "PATCH",
        f"{fake_apiserver.url}/apis/{GROUP}/v1/namespaces/default/widgets/w",
        body=json.dumps({"spec": {"size": 2}}),
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert response.status == 415
    assert json.loads(response.data)["reason"] == "UnsupportedMediaType"


def test_deleting_the_crd_removes_its_objects_and_endpoints(
    fake_apiserver: FakeApiServer,
    extensions: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    """Deleting a CRD drops its custom objects and stops serving its paths."""
    extensions.create_custom_resource_definition(crd(GROUP, "Widget", "widgets"))
    fake_apiserver.create(widget("w"))
    extensions.delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(ApiException) as exc:
        custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert exc.value.status == 404


def test_crd_name_must_be_plural_dot_group(extensions: client.ApiextensionsV1Api) -> None:
    """A CRD whose name is not <plural>.<group> is 422 Invalid."""
    body = crd(GROUP, "Widget", "widgets")
    body["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(ApiException) as exc:
        extensions.create_custom_resource_definition(body)
    assert exc.value.status == 422


def test_all_served_versions_share_storage(
    extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    """Objects created under one version are served under every version of the CRD."""
    extensions.create_custom_resource_definition(
        crd(GROUP, "Widget", "widgets", versions=("v1", "v1beta1"))
    )
    custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    old = custom.get_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", "w")
    assert old["apiVersion"] == f"{GROUP}/v1beta1"


def test_custom_object_watch_streams_dict_events(
    fake_apiserver: FakeApiServer,
    extensions: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    """kubernetes.watch streams custom-object events as dicts."""
    extensions.create_custom_resource_definition(crd(GROUP, "Widget", "widgets"))
    rv = fake_apiserver.resource_version
    fake_apiserver.create(widget("w"))
    fake_apiserver.patch("widgets", "w", {"spec": {"size": 5}}, "default", patch_type="merge")
    watcher = watch.Watch()
    events = []
    for event in watcher.stream(
        custom.list_namespaced_custom_object,
        GROUP,
        "v1",
        "default",
        "widgets",
        resource_version=rv,
        timeout_seconds=5,
    ):
        events.append(event)
        if len(events) == 2:
            watcher.stop()
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    assert events[1]["object"]["spec"] == {"size": 5}
