"""Requests that got no HTTP response: the client's status-0 ``ApiException`` keeps its reason."""

from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from agent.kube.api import KubeApi
from agent.kube.errors import KubeError, TLSError, Unavailable
from agent.kube.resources import NODES


class _RaisingClient(k8s_client.ApiClient):
    """The official client, except that sending raises what the client's REST layer raises."""

    def __init__(self, error: Exception) -> None:
        configuration = k8s_client.Configuration()
        configuration.host = "https://api.example:6443"
        super().__init__(configuration)
        self.error = error

    def call_api(self, *_args: Any, **_kwargs: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("reason", "cls", "kept"),
    [
        pytest.param(
            "SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
            "unable to get local issuer certificate (_ssl.c:1006)",
            TLSError,
            "unable to get local issuer certificate",
            id="certificate-verify-failed",
        ),
        pytest.param(
            "SSLError\nEOF occurred in violation of protocol (_ssl.c:2427)",
            Unavailable,
            "EOF occurred in violation of protocol",
            id="handshake-cut-short",
        ),
    ],
)
def test_status_zero_keeps_its_reason(reason: str, cls: type[KubeError], kept: str) -> None:
    """ApiException(status=0) becomes our class with the client's reason, never "HTTP 0"."""
    api = KubeApi(_RaisingClient(ApiException(status=0, reason=reason)))
    with pytest.raises(KubeError) as caught:
        api.get(NODES, "n1")
    assert type(caught.value) is cls
    assert kept in str(caught.value)
    assert "HTTP 0" not in str(caught.value)
    assert isinstance(caught.value.__cause__, ApiException)
