"""Fault injection and the request log of the fake API server."""

from __future__ import annotations

import json
import threading
import time

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer

PODS = r"/api/v1/namespaces/default/pods$"
CONFIGMAPS = r"/api/v1/namespaces/default/configmaps$"


def test_injected_503_then_success(fake_apiserver: FakeApiServer, core: client.CoreV1Api) -> None:
    """faults.add(status=503, times=1) fails exactly the next matching request with a Status."""
    rule = fake_apiserver.faults.add("GET", PODS, status=503, times=1)
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("default")
    assert exc.value.status == 503
    body = json.loads(exc.value.body or "{}")
    assert (body["kind"], body["status"], body["reason"]) == (
        "Status",
        "Failure",
        "ServiceUnavailable",
    )
    assert core.list_namespaced_pod("default").items == []
    assert [r.status for r in fake_apiserver.requests("GET", "/pods")] == [503, 200]
    assert (rule.hits, rule.remaining) == (1, 0)


def test_injected_429_carries_retry_after(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A 429 fault with retry_after sets the Retry-After header and details.retryAfterSeconds."""
    fake_apiserver.faults.add("POST", CONFIGMAPS, status=429, retry_after=3)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    assert exc.value.status == 429
    assert exc.value.headers["Retry-After"] == "3"
    assert json.loads(exc.value.body or "{}")["details"]["retryAfterSeconds"] == 3


def test_hang_makes_the_client_time_out_while_the_server_still_applies(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """faults.hang delays a request past the client's timeout; the write still happens later."""
    fake_apiserver.faults.hang("POST", CONFIGMAPS, seconds=0.5)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "slow"}}, _request_timeout=0.1
        )
    fake_apiserver.wait_for("configmaps", "slow", lambda obj: obj is not None, "default", timeout=5)


def test_dropped_connection_sends_no_response(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """faults.drop_connections closes the socket without a response; nothing is written."""
    fake_apiserver.faults.drop_connections("POST", CONFIGMAPS)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.create_namespaced_config_map("default", {"metadata": {"name": "lost"}})
    assert not fake_apiserver.exists("configmaps", "lost", "default")
    assert [r.status for r in fake_apiserver.requests("POST", "/configmaps")] == [None]
    core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})


def test_urllib3_silently_retries_a_dropped_get(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A GET whose connection drops once is retried by urllib3: the caller sees success."""
    fake_apiserver.faults.drop_connections("GET", PODS, times=1)
    assert core.list_namespaced_pod("default").items == []
    assert [r.status for r in fake_apiserver.requests("GET", "/pods")] == [None, 200]


def test_outage_fails_every_request_until_it_ends(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Inside outage(), every request is 503 (or dropped); afterwards service resumes."""
    with fake_apiserver.outage():
        for call in (core.list_namespace, lambda: core.read_namespace("default")):
            with pytest.raises(ApiException) as exc:
                call()
            assert exc.value.status == 503
    with fake_apiserver.outage(mode="drop"), pytest.raises(urllib3.exceptions.HTTPError):
        core.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    assert core.read_namespace("default").metadata.name == "default"


def test_watch_only_faults_spare_lists(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A rule with watch=True affects watch requests and not plain lists of the same path."""
    fake_apiserver.faults.add("GET", PODS, status=500, times=None, watch=True)
    assert core.list_namespaced_pod("default").items == []
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("default", watch=True, _preload_content=False)
    assert exc.value.status == 500


def test_request_log_records_method_path_query_body_and_status(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """Each request is logged with method, path, parsed query and body, content type, status."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    core.list_namespaced_config_map("default", label_selector="app=x", limit=5)
    core.patch_namespaced_config_map("cm", "default", {"data": {"a": "2"}})
    post, get, patch = fake_apiserver.requests(path_contains="/configmaps")
    assert (post.method, post.status, post.body["data"]) == ("POST", 201, {"a": "1"})
    assert get.query == {"labelSelector": "app=x", "limit": "5"}
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert patch.path == "/api/v1/namespaces/default/configmaps/cm"
    assert post.monotonic <= get.monotonic <= patch.monotonic
    assert abs(post.wall_time - time.time()) < 60


def test_wait_for_request_blocks_until_a_match_arrives(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """wait_for_request returns the first matching request, waiting for it if needed."""
    worker = threading.Thread(target=lambda: core.delete_collection_namespaced_pod("default"))
    worker.start()
    request = fake_apiserver.wait_for_request(lambda r: r.method == "DELETE", timeout=5)
    worker.join(timeout=5)
    assert request.path == "/api/v1/namespaces/default/pods"
    with pytest.raises(TimeoutError):
        fake_apiserver.wait_for_request(lambda r: r.method == "PUT", timeout=0.05)


def test_request_log_is_not_blocked_by_a_hanging_request(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """While a fault holds a request, the log shows it without a status; then its final one."""
    fake_apiserver.faults.hang("POST", CONFIGMAPS, seconds=0.3)
    worker = threading.Thread(
        target=lambda: core.create_namespaced_config_map("default", {"metadata": {"name": "held"}})
    )
    worker.start()
    fake_apiserver.wait_for_request(lambda r: r.method == "POST", timeout=5)
    started = time.monotonic()
    assert [r.status for r in fake_apiserver.requests("POST")] == [None]
    assert time.monotonic() - started < 0.25
    worker.join(timeout=5)
    assert [r.status for r in fake_apiserver.requests("POST")] == [201]


def test_request_log_counts_response_bytes(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """A logged request carries the body bytes it was answered with: a list's whole body, and
    for a watch every event chunk sent so far (what the benchmarks report as received)."""
    fake_apiserver.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    response = core.list_namespaced_pod("default", _preload_content=False)
    body = response.data
    listed = fake_apiserver.requests("GET", "/pods")[-1]
    assert listed.response_bytes == len(body)
    stream = core.list_namespaced_pod(
        "default", watch=True, timeout_seconds=1, _preload_content=False
    )
    received = stream.data
    watched = [r for r in fake_apiserver.requests("GET", "/pods") if r.is_watch][-1]
    assert b'"ADDED"' in received
    assert watched.response_bytes == len(received)


def test_cut_watches_breaks_open_streams_mid_stream(
    fake_apiserver: FakeApiServer, core: client.CoreV1Api
) -> None:
    """cut_watches() ends every open watch without its final chunk; the client sees an error."""
    response = core.list_namespaced_pod(
        "default", watch=True, timeout_seconds=30, _preload_content=False
    )
    fake_apiserver.wait_for_watches("pods")
    assert fake_apiserver.cut_watches() == 1
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for _ in response.stream(1024):
            pass
    fake_apiserver.wait_for_watches_closed("pods")
    assert fake_apiserver.cut_watches() == 0
