"""The proxy a connection uses is the one the environment named when it was made."""

import pytest

from agent.kube.api import KubeApi
from agent.kube.resources import NODES
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer


def test_the_environment_is_not_read_again_at_every_request(
    kube_api: KubeApi, fake_apiserver: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy variable set after connecting changes neither the requests nor the client's
    configuration: the token-refresh hook's per-request ``host`` assignment no longer
    re-scans ``os.environ`` (the pool was built with the proxy of the connect)."""
    fake_apiserver.create(kubeobjects.node("n1"))
    at_connect = kube_api.api_client.configuration.proxy
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert kube_api.get(NODES, "n1")["metadata"]["name"] == "n1"
    assert kube_api.api_client.configuration.proxy == at_connect
