"""KubeApi over real HTTP: raw JSON in, our own error classes out, never ApiException."""

import pytest

from agent.kube.api import KubeApi
from agent.kube.errors import (
    Conflict,
    Invalid,
    NotFound,
    Timeout,
    TooManyRequests,
    Unavailable,
)
from agent.kube.resources import NODES, POD_DISRUPTION_BUDGETS, PODS
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer


def test_get_returns_plain_json(kube_api: KubeApi, fake_apiserver: FakeApiServer) -> None:
    """Objects come back as dicts straight from the wire."""
    fake_apiserver.create(kubeobjects.node("n1"))
    node = kube_api.get(NODES, "n1")
    assert isinstance(node, dict)
    assert node["metadata"]["name"] == "n1"


def test_missing_object_is_not_found(kube_api: KubeApi) -> None:
    """404 becomes NotFound."""
    with pytest.raises(NotFound):
        kube_api.get(NODES, "absent")


def test_stale_resource_version_is_conflict(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A merge patch carrying an old resourceVersion is a Conflict."""
    node = fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.patch("nodes", "n1", {"metadata": {"labels": {"x": "1"}}})
    stale = {
        "metadata": {"resourceVersion": node["metadata"]["resourceVersion"], "labels": {"y": "2"}}
    }
    with pytest.raises(Conflict) as caught:
        kube_api.patch(NODES, "n1", stale, patch_type="merge")
    assert not caught.value.already_exists


def test_failed_test_op_is_invalid(kube_api: KubeApi, fake_apiserver: FakeApiServer) -> None:
    """A JSON patch whose resourceVersion test fails is Invalid (422)."""
    fake_apiserver.create(kubeobjects.node("n1", labels={}))  # so only the test op can fail
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "add", "path": "/metadata/labels/kubelet-companion.io~1x", "value": "y"},
    ]
    with pytest.raises(Invalid):
        kube_api.patch(NODES, "n1", guarded)
    assert "kubelet-companion.io/x" not in fake_apiserver.get("nodes", "n1")["metadata"]["labels"]


def test_create_twice_is_already_exists(kube_api: KubeApi) -> None:
    """409 AlreadyExists is a Conflict that says so."""
    kube_api.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    with pytest.raises(Conflict) as caught:
        kube_api.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    assert caught.value.already_exists


def test_pdb_refusal_is_too_many_requests(kube_api: KubeApi, fake_apiserver: FakeApiServer) -> None:
    """An eviction a PDB forbids is TooManyRequests marked as a disruption-budget refusal."""
    kubelet = fake_apiserver.kubelet("n1")
    fake_apiserver.create(kubeobjects.pod("guarded", node="n1", labels={"app": "db"}))
    kubelet.set_ready("default", "guarded")
    kube_api.create(
        POD_DISRUPTION_BUDGETS,
        kubeobjects.pdb("db", match_labels={"app": "db"}, min_available=1),
        "default",
    )
    with pytest.raises(TooManyRequests) as caught:
        kube_api.evict("guarded", "default", grace_period_seconds=1)
    assert caught.value.disruption_budget


def test_server_errors_are_unavailable(kube_api: KubeApi, fake_apiserver: FakeApiServer) -> None:
    """A 503 is Unavailable; the next call succeeds once the fault is spent."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.add("PATCH", r"/api/v1/nodes/n1$", status=503, times=1)
    with pytest.raises(Unavailable):
        kube_api.patch(NODES, "n1", {"metadata": {"labels": {"a": "b"}}}, patch_type="merge")
    kube_api.patch(NODES, "n1", {"metadata": {"labels": {"a": "b"}}}, patch_type="merge")


def test_a_hanging_server_times_out(kube_api: KubeApi, fake_apiserver: FakeApiServer) -> None:
    """A response slower than the request timeout raises Timeout, an Unavailable."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.hang("PATCH", r"/api/v1/nodes/n1$", seconds=5, times=1)
    with pytest.raises(Timeout):
        kube_api.patch(NODES, "n1", {"metadata": {"labels": {"a": "b"}}}, patch_type="merge")


def test_list_follows_continue_tokens(kube_api: KubeApi, fake_apiserver: FakeApiServer) -> None:
    """Paged lists are joined: every item arrives whatever the page size."""
    for index in range(7):
        fake_apiserver.create(kubeobjects.pod(f"p{index}", node="n1"))
    listing = kube_api.list(PODS, namespace="default", page_size=3)
    assert sorted(p["metadata"]["name"] for p in listing["items"]) == [f"p{i}" for i in range(7)]
    pages = fake_apiserver.requests(method="GET", path_contains="/namespaces/default/pods")
    assert len(pages) == 3


def test_field_selector_narrows_to_one_node(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """spec.nodeName selects this node's pods only."""
    fake_apiserver.create(kubeobjects.pod("mine", node="n1"))
    fake_apiserver.create(kubeobjects.pod("theirs", node="n2"))
    listing = kube_api.list(PODS, field_selector="spec.nodeName=n1", resource_version="0")
    assert [p["metadata"]["name"] for p in listing["items"]] == ["mine"]
