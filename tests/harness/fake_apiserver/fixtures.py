"""Pytest fixtures for the fake API server, and our own client pointed at it.

Register them with `pytest_plugins = ["tests.harness.fake_apiserver.fixtures"]` in a top-level
conftest, or import the fixture names into a conftest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.connection import Component, connect

from .server import FakeApiServer


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    """A started fake API server, stopped after the test."""
    with FakeApiServer() as server:
        yield server


@pytest.fixture
def fake_api_client(fake_apiserver: FakeApiServer) -> Iterator[client.ApiClient]:
    """An official-client `ApiClient` pointed at `fake_apiserver`."""
    with fake_apiserver.api_client() as api:
        yield api


@pytest.fixture
def kube_component() -> Component | None:
    """Whose User-Agent `kube_api` sends: by default none (the client's own), so its
    requests count towards no component's RBAC proof. Tests that act as one component
    (the descheduler's) override this fixture in their conftest."""
    return None


@pytest.fixture
def kube_request_timeout() -> float:
    """`kube_api`'s request timeout: short, so a test of a hanging server ends soon."""
    return 2.0


@pytest.fixture
def kube_api(
    fake_apiserver: FakeApiServer,
    tmp_path_factory: pytest.TempPathFactory,
    kube_component: Component | None,
    kube_request_timeout: float,
) -> Iterator[KubeApi]:
    """Our `KubeApi` on the official client, pointed at `fake_apiserver`; closed after."""
    path = fake_apiserver.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")
    connection = connect(str(path), component=kube_component)
    assert connection is not None
    api = KubeApi(connection.api_client, request_timeout=kube_request_timeout)
    yield api
    api.close()


@pytest.fixture
def async_kube(kube_api: KubeApi) -> Iterator[AsyncKube]:
    """`kube_api` behind our asyncio adapter; closed after the test."""
    kube = AsyncKube(kube_api)
    yield kube
    kube.close()
