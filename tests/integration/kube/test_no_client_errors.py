"""Every KubeApi verb, against every way a server can fail: only agent.kube.errors come out."""

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from agent.kube.api import KubeApi
from agent.kube.connection import connect
from agent.kube.errors import KubeError
from agent.kube.resources import NODES, PODS
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.tls import TlsEndpoint

Verb = Callable[[KubeApi], Any]

VERBS = [
    pytest.param(lambda api: api.get(NODES, "n1"), id="get"),
    pytest.param(lambda api: api.list(PODS, namespace="default"), id="list"),
    pytest.param(
        lambda api: api.create(NODES, kubeobjects.node("n2")),
        id="create",
    ),
    pytest.param(
        lambda api: api.patch(
            NODES, "n1", [{"op": "add", "path": "/metadata/labels/a", "value": "b"}]
        ),
        id="patch-json",
    ),
    pytest.param(
        lambda api: api.patch(
            NODES, "n1", {"metadata": {"labels": {"a": "b"}}}, patch_type="merge"
        ),
        id="patch-merge",
    ),
    pytest.param(lambda api: api.delete(PODS, "p", "default"), id="delete"),
    pytest.param(lambda api: api.evict("p", "default"), id="evict"),
    pytest.param(lambda api: list(api.watch(PODS, resource_version="1")), id="watch"),
    pytest.param(lambda api: api.request("GET", "/version"), id="request"),
]


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there any more


def _plain_kubeconfig(path: Path, url: str) -> Path:
    cluster = {"name": "c", "cluster": {"server": url}}
    context = {"name": "c", "context": {"cluster": "c", "user": "u"}}
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [context],
        "current-context": "c",
    }
    path.write_text(json.dumps(kubeconfig) + "\n")
    return path


class _Failing:
    """Makes a kubeconfig for one kind of failing server, kept up for the test's length."""

    def __init__(self, kind: str, directory: Path, stack: ExitStack) -> None:
        self.kind = kind
        self.directory = directory
        self.stack = stack

    def kubeconfig(self) -> Path:
        path = self.directory / "kubeconfig"
        if self.kind == "closed-port":
            return _plain_kubeconfig(path, _closed_port_url())
        if self.kind == "untrusted-tls":
            endpoint = self.stack.enter_context(TlsEndpoint(self.directory))
            return endpoint.write_kubeconfig(path, trusted=False)
        server = self.stack.enter_context(FakeApiServer())
        server.create(kubeobjects.node("n1"))
        server.create(kubeobjects.pod("p", node="n1"))
        if self.kind == "dropped-connections":
            server.faults.drop_connections(times=None)
        else:
            server.faults.add(status=int(self.kind), times=None)
        return server.write_kubeconfig(path)


@pytest.fixture(params=["closed-port", "untrusted-tls", "dropped-connections", "500", "503"])
def failing_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KubeApi]:
    with ExitStack() as stack:
        kubeconfig = _Failing(request.param, tmp_path, stack).kubeconfig()
        connection = connect(str(kubeconfig))
        assert connection is not None
        api = KubeApi(connection.api_client, request_timeout=2.0)
        stack.callback(api.close)
        yield api


@pytest.mark.parametrize("verb", VERBS)
def test_only_our_errors_leave_the_adapter(failing_api: KubeApi, verb: Verb) -> None:
    """Whatever the failure, the caller sees a KubeError subclass, never a client exception."""
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the point is to see what escapes
        verb(failing_api)
    assert isinstance(caught.value, KubeError), repr(caught.value)
    assert type(caught.value).__module__ == "agent.kube.errors"
    assert str(caught.value)  # a reason, for the log
