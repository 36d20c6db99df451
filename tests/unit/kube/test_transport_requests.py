"""What KubeApi puts on the wire now that it writes to the client's connection pool itself:
the server's path prefix, the client's token (refreshed per request) and User-Agent, the
body as compact JSON, and a pool closed by ``close`` reopened on the next request."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client as k8s_client

from agent.kube.api import KubeApi
from agent.kube.errors import Unavailable
from agent.kube.resources import NODES, PODS


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]]
    payload = b'{"kind": "Status"}'

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {key.lower(): value for key, value in self.headers.items()},
                "body": self.rfile.read(length),
            }
        )
        payload = self.payload
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer  # noqa: N815 - the names http.server dispatches to

    def log_message(self, *_args: Any) -> None:
        return None


@pytest.fixture(name="server")
def _server(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    payload = getattr(request, "param", _Recorder.payload)
    handler = type("Handler", (_Recorder,), {"seen": seen, "payload": payload})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _api(host: str) -> tuple[KubeApi, list[str]]:
    """A KubeApi whose token changes at every request, as a refresh hook may make it."""
    configuration = k8s_client.Configuration()
    configuration.host = host
    tokens: list[str] = []

    def refresh(config: k8s_client.Configuration) -> None:
        tokens.append(f"token-{len(tokens)}")
        config.api_key["BearerToken"] = f"Bearer {tokens[-1]}"

    configuration.api_key["BearerToken"] = "Bearer unset"
    configuration.refresh_api_key_hook = refresh
    client = k8s_client.ApiClient(configuration)
    client.user_agent = "kubelet-companion-test/0"
    return KubeApi(client), tokens


def test_a_server_behind_a_path_prefix_gets_the_prefix(
    server: tuple[str, list[dict[str, Any]]],
) -> None:
    """A kubeconfig server with a path (a cluster behind a proxy path) keeps it on every
    request, the query string after it."""
    url, seen = server
    api, _ = _api(f"{url}/k8s/clusters/c-1")
    api.list(NODES, label_selector="a=b,c!=d", resource_version="0")
    api.close()
    assert [r["path"] for r in seen] == [
        "/k8s/clusters/c-1/api/v1/nodes?labelSelector=a%3Db%2Cc%21%3Dd&resourceVersion=0"
    ]


def test_each_request_carries_the_refreshed_token_and_our_user_agent(
    server: tuple[str, list[dict[str, Any]]],
) -> None:
    """The client's refresh hook runs before every request and its token is the one sent;
    the User-Agent is the client's, and the Eviction body is compact JSON."""
    url, seen = server
    api, tokens = _api(url)
    api.get(NODES, "n1")
    api.evict("p1", "default", grace_period_seconds=5)
    api.close()
    assert [r["headers"]["authorization"] for r in seen] == [f"Bearer {t}" for t in tokens]
    assert len(set(tokens)) == 2
    assert {r["headers"]["user-agent"] for r in seen} == {"kubelet-companion-test/0"}
    eviction = seen[1]
    assert eviction["path"] == PODS.path(namespace="default", name="p1", subresource="eviction")
    assert eviction["headers"]["content-type"] == "application/json"
    assert json.loads(eviction["body"]) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p1", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 5},
    }


def test_a_closed_pool_is_reopened_by_the_next_request(
    server: tuple[str, list[dict[str, Any]]],
) -> None:
    """After ``close`` (which closes the client's pools) a request still goes out."""
    url, seen = server
    api, _ = _api(url)
    api.get(NODES, "n1")
    api.close()
    api.get(NODES, "n2")
    api.close()
    assert [r["path"] for r in seen] == ["/api/v1/nodes/n1", "/api/v1/nodes/n2"]


@pytest.mark.parametrize("server", [pytest.param(b"<not JSON>", id="garbled-body")], indirect=True)
def test_an_eviction_answer_is_drained_not_decoded(
    server: tuple[str, list[dict[str, Any]]],
) -> None:
    """Nobody reads an Eviction's answer, so a 2xx body that is not JSON is no error (it is
    read to free the connection, never decoded), while a read that decodes still fails."""
    url, seen = server
    api, _ = _api(url)
    api.evict("p1", "default")
    with pytest.raises(Unavailable, match="not JSON"):
        api.get(NODES, "n1")
    api.close()
    assert [r["method"] for r in seen] == ["POST", "GET"]
