"""A KubeApi on the official client, pointed at the fake API server."""

from collections.abc import Iterator

import pytest

from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.connection import connect
from tests.harness.fake_apiserver import FakeApiServer


@pytest.fixture
def kube_api(fake_apiserver: FakeApiServer, tmp_path_factory: pytest.TempPathFactory) -> KubeApi:
    path = fake_apiserver.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")
    connection = connect(str(path))
    assert connection is not None
    return KubeApi(connection.api_client, request_timeout=2.0)


@pytest.fixture
def async_kube(kube_api: KubeApi) -> Iterator[AsyncKube]:
    kube = AsyncKube(kube_api)
    yield kube
    kube.close()
