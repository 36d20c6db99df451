"""Watch semantics of the fake API server: replay, bookmarks, expiry, selectors, streaming."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import pod

JSON = dict[str, Any]


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    """A fake server with a short bookmark interval (keeps bookmark tests fast)."""
    with FakeApiServer(bookmark_interval=0.1) as fake:
        yield fake


@pytest.fixture
def core(server: FakeApiServer) -> Iterator[client.CoreV1Api]:
    """CoreV1Api on `server`."""
    with server.api_client() as api:
        yield client.CoreV1Api(api)


def read_lines(response: Any, count: int | None = None) -> list[JSON]:
    """Read raw (`_preload_content=False`) watch events, one JSON per line.

    Reads to the end of the stream, or only `count` events (then closes the response).
    """
    buffer = b""
    events: list[JSON] = []
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                events.append(json.loads(line))
            if count is not None and len(events) >= count:
                response.close()
                return events
    response.release_conn()
    return events


def take(func: Callable[..., Any], *args: Any, count: int, **kwargs: Any) -> list[JSON]:
    """The first `count` events of an official-client watch (5 s guard against hangs)."""
    watcher = watch.Watch()
    events: list[JSON] = []
    for event in watcher.stream(func, *args, timeout_seconds=5, **kwargs):
        events.append(event)
        if len(events) >= count:
            watcher.stop()
    return events


def types(events: list[JSON]) -> list[str]:
    """Event types, in order."""
    return [e["type"] for e in events]


def names(events: list[JSON]) -> list[tuple[str, str]]:
    """(type, object name) pairs, bookmarks left out."""
    return [
        (e["type"], e["raw_object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"
    ]


def after_watch_opens(
    server: FakeApiServer, resource: str, action: Callable[[], None]
) -> threading.Thread:
    """Run `action` in a thread once a watch on `resource` is open."""

    def run() -> None:
        server.wait_for_watches(resource, timeout=5)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_watch_replays_changes_after_a_resource_version(core: client.CoreV1Api) -> None:
    """A watch from RV N replays ADDED/MODIFIED/DELETED after N as typed objects."""
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    core.patch_namespaced_config_map("cm", "default", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("cm", "default")
    events = take(core.list_namespaced_config_map, "default", resource_version=rv, count=3)
    assert names(events) == [("ADDED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]
    assert isinstance(events[1]["object"], client.V1ConfigMap)
    assert events[1]["object"].data == {"k": "v"}
    assert events[0]["raw_object"]["kind"] == "ConfigMap"
    assert events[0]["raw_object"]["apiVersion"] == "v1"
    rvs = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)


def test_fresh_watch_starts_with_synthetic_added_then_live_events(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Without a resourceVersion, a watch lists current objects as ADDED, then streams changes."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    writer = after_watch_opens(
        server,
        "configmaps",
        lambda: server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    )
    watcher = watch.Watch()
    seen: list[JSON] = []
    for event in watcher.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
        seen.append(event)
        if len(seen) == 3:
            watcher.stop()
    writer.join(timeout=5)
    assert names(seen) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


def test_bookmarks_carry_only_the_resource_version(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """allowWatchBookmarks yields periodic BOOKMARKs (kind, apiVersion, RV) and one at timeout."""
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("p"))
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "default",
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        )
    )
    assert events[0]["type"] == "ADDED"
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2
    assert events[-1]["type"] == "BOOKMARK"
    for bookmark in bookmarks:
        obj = bookmark["raw_object"]
        assert obj["kind"] == "Pod"
        assert obj["apiVersion"] == "v1"
        assert set(obj["metadata"]) == {"resourceVersion"}
        assert int(obj["metadata"]["resourceVersion"]) >= int(
            events[0]["raw_object"]["metadata"]["resourceVersion"]
        )


def test_watch_from_compacted_resource_version_is_410_error_event(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """After compact(), a watch from an older RV answers 200 with one ERROR event (410 Expired)."""
    core.create_namespaced_pod("default", pod("p"))
    server.compact()
    response = core.list_namespaced_pod(
        "default", watch=True, resource_version="1", _preload_content=False
    )
    assert response.status == 200
    events = read_lines(response)
    assert types(events) == ["ERROR"]
    status = events[0]["object"]
    assert status["kind"] == "Status"
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"] == f"too old resource version: 1 ({server.resource_version})"


def test_official_watch_raises_410_for_an_expired_resource_version(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """kubernetes.watch surfaces the expired watch as ApiException(410) when it cannot retry."""
    server.compact()
    core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(ApiException) as exc:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "default", resource_version="2", timeout_seconds=1
            )
        )
    assert exc.value.status == 410


def test_history_limit_expires_old_resource_versions() -> None:
    """Events beyond history_limit are dropped: a watch from before them is 410."""
    with FakeApiServer(history_limit=3) as fake, fake.api_client() as api:
        core = client.CoreV1Api(api)
        start = int(fake.resource_version)
        for i in range(5):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        stale = core.list_namespaced_config_map(
            "default", watch=True, resource_version=str(start), _preload_content=False
        )
        assert types(read_lines(stale)) == ["ERROR"]
        recent = core.list_namespaced_config_map(
            "default", watch=True, resource_version=str(start + 3), _preload_content=False
        )
        events = read_lines(recent, count=2)
        assert [e["object"]["metadata"]["name"] for e in events] == ["c3", "c4"]


def test_label_selector_watch_sees_objects_leave_and_enter(core: client.CoreV1Api) -> None:
    """An object that stops matching is DELETED for the watcher; matching again is ADDED."""
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("web", labels={"app": "web"}))
    core.create_namespaced_pod("default", pod("db", labels={"app": "db"}))
    core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"tier": "1"}}})
    core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"app": "other"}}})
    core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"app": "web"}}})
    events = take(
        core.list_namespaced_pod, "default", label_selector="app=web", resource_version=rv, count=4
    )
    assert names(events) == [
        ("ADDED", "web"),
        ("MODIFIED", "web"),
        ("DELETED", "web"),
        ("ADDED", "web"),
    ]
    gone = events[2]["raw_object"]
    assert gone["metadata"]["labels"]["app"] == "web"  # the last matching content


def test_field_selector_watch_follows_binding_to_a_node(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A spec.nodeName watch sees a pod when it is bound to the node, not before."""
    rv = server.resource_version
    core.create_namespaced_pod("default", pod("elsewhere", node="node-b"))
    core.create_namespaced_pod("default", pod("pending"))
    server.bind("default", "pending", "node-a")
    server.create(pod("later", node="node-a"))
    events = take(
        core.list_pod_for_all_namespaces,
        field_selector="spec.nodeName=node-a",
        resource_version=rv,
        count=2,
    )
    assert names(events) == [("ADDED", "pending"), ("ADDED", "later")]
    conditions = events[0]["raw_object"]["status"]["conditions"]
    assert {"type": "PodScheduled", "status": "True"}.items() <= conditions[0].items()


def test_send_initial_events_ends_with_an_annotated_bookmark(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """sendInitialEvents=true streams the state then a BOOKMARK marked initial-events-end."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    response = core.list_namespaced_config_map(
        "default",
        watch=True,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        _preload_content=False,
    )
    events = read_lines(response, count=2)
    assert types(events) == ["ADDED", "BOOKMARK"]
    annotations = events[1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


def test_raw_stream_is_chunked_ndjson_on_the_legacy_watch_path(server: FakeApiServer) -> None:
    """/api/v1/watch/... streams newline-delimited JSON events with kind/apiVersion objects."""
    server.create(pod("p", node="n"))
    http = urllib3.PoolManager()
    response = http.request(
        "GET",
        f"{server.url}/api/v1/watch/namespaces/default/pods",
        preload_content=False,
    )
    assert response.headers["Transfer-Encoding"] == "chunked"
    events = read_lines(response, count=1)
    assert types(events) == ["ADDED"]
    assert events[0]["object"]["kind"] == "Pod"
    assert events[0]["object"]["apiVersion"] == "v1"


def test_timeout_seconds_ends_the_stream(core: client.CoreV1Api) -> None:
    """timeoutSeconds closes an idle watch; the official stream then simply ends."""
    events = list(watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1))
    assert events == []


def test_client_disconnect_ends_the_server_side_watch(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Closing the client side of a watch releases it on the server without errors."""
    response = core.list_namespaced_pod("default", watch=True, _preload_content=False)
    server.wait_for_watches("pods", timeout=5)
    response.close()
    server.wait_for_watches_closed("pods", timeout=5)
    assert core.list_namespaced_pod("default").items == []


def test_stopping_the_server_ends_open_watches_cleanly() -> None:
    """stop() ends open watch streams with a proper end of stream, not a broken connection."""
    fake = FakeApiServer().start()
    try:
        with fake.api_client() as api:
            response = client.CoreV1Api(api).list_namespaced_pod(
                "default", watch=True, _preload_content=False
            )
            fake.wait_for_watches("pods", timeout=5)
            fake.stop()
            assert read_lines(response) == []
    finally:
        fake.stop()


def test_in_process_writes_reach_http_watchers(
    server: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Writes through the in-process API produce watch events like HTTP writes."""
    rv = server.resource_version
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    server.patch("configmaps", "x", {"data": {"a": "b"}}, "default")
    server.delete("configmaps", "x", "default")
    events = take(core.list_namespaced_config_map, "default", resource_version=rv, count=3)
    assert types(events) == ["ADDED", "MODIFIED", "DELETED"]
