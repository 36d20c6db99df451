"""Label and field selectors on lists and watches of the fake API server."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import pod


@pytest.fixture
def core(fake_apiserver: FakeApiServer, fake_api_client: client.ApiClient) -> client.CoreV1Api:
    """CoreV1Api with pods a (app=web,tier=front), b (app=db), c (no labels)."""
    fake_apiserver.create(pod("a", node="node-1", labels={"app": "web", "tier": "front"}))
    fake_apiserver.create(pod("b", node="node-2", labels={"app": "db"}))
    fake_apiserver.create(pod("c"))
    fake_apiserver.patch(
        "pods", "b", {"status": {"phase": "Running"}}, "default", subresource="status"
    )
    return client.CoreV1Api(fake_api_client)


def listed(core: client.CoreV1Api, **selectors: str) -> list[str]:
    """Names of the pods in default matching the selectors."""
    return [p.metadata.name for p in core.list_namespaced_pod("default", **selectors).items]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a"]),
        ("app==web", ["a"]),
        ("app!=web", ["b", "c"]),
        ("app in (web,db)", ["a", "b"]),
        ("app notin (web)", ["b", "c"]),
        ("app", ["a", "b"]),
        ("!app", ["c"]),
        ("app=web,tier=front", ["a"]),
        ("app,!tier", ["b"]),
        ("", ["a", "b", "c"]),
    ],
)
def test_label_selector_operators(
    core: client.CoreV1Api, selector: str, expected: list[str]
) -> None:
    """=, ==, !=, in, notin, exists and !exists, comma-joined, match like apimachinery."""
    assert listed(core, label_selector=selector) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-1", ["a"]),
        ("spec.nodeName!=node-1", ["b", "c"]),
        ("spec.nodeName=", ["c"]),
        ("metadata.name=b", ["b"]),
        ("metadata.name==c", ["c"]),
        ("status.phase=Running", ["b"]),
        ("status.phase!=Running,spec.nodeName=node-1", ["a"]),
        ("metadata.namespace=default", ["a", "b", "c"]),
    ],
)
def test_field_selectors_on_pods(
    core: client.CoreV1Api, selector: str, expected: list[str]
) -> None:
    """spec.nodeName, metadata.name, metadata.namespace and status.phase select pods."""
    assert listed(core, field_selector=selector) == expected


def test_unsupported_field_label_is_bad_request(core: client.CoreV1Api) -> None:
    """An unknown field label for a typed resource is 400, as the real server answers."""
    with pytest.raises(ApiException) as exc:
        listed(core, field_selector="spec.schedulerName=x,spec.color=blue")
    assert exc.value.status == 400
    assert json.loads(exc.value.body or "{}")["message"] == "field label not supported: spec.color"


def test_malformed_label_selector_is_bad_request(core: client.CoreV1Api) -> None:
    """A label selector that does not parse is 400 BadRequest."""
    with pytest.raises(ApiException) as exc:
        listed(core, label_selector="app in web")
    assert exc.value.status == 400


def test_event_field_selectors_use_involved_object(
    fake_apiserver: FakeApiServer, fake_api_client: client.ApiClient
) -> None:
    """Core events select on involvedObject.* and reason."""
    for name, target, reason in (
        ("e1", "a", "Killing"),
        ("e2", "b", "Killing"),
        ("e3", "a", "Pulled"),
    ):
        fake_apiserver.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": target, "namespace": "default"},
                "reason": reason,
            }
        )
    core = client.CoreV1Api(fake_api_client)
    events = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=a,reason=Killing"
    )
    assert [e.metadata.name for e in events.items] == ["e1"]


def test_field_selector_on_a_cluster_wide_watch(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Field selectors filter watch events too (metadata.name on an all-namespaces watch)."""
    watcher = watch.Watch()
    seen = []
    for event in watcher.stream(
        core.list_pod_for_all_namespaces, field_selector="metadata.name=b", timeout_seconds=5
    ):
        seen.append(event["raw_object"]["metadata"]["name"])
        watcher.stop()
    assert seen == ["b"]
