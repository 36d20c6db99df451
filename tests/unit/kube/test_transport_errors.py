"""Requests that got no HTTP response: the transport's ``SSLError`` keeps its reason."""

import ssl
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s_client

from agent.kube.api import KubeApi
from agent.kube.errors import KubeError, TLSError, Unavailable
from agent.kube.resources import NODES


class _RaisingPool:
    """The client's connection pool, except that sending raises what urllib3 raises."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def request(self, *_args: Any, **_kwargs: Any) -> Any:
        raise self.error


def _api_raising(error: Exception) -> KubeApi:
    configuration = k8s_client.Configuration()
    configuration.host = "https://api.example:6443"
    client = k8s_client.ApiClient(configuration)
    client.rest_client.pool_manager = _RaisingPool(error)
    return KubeApi(client)


@pytest.mark.parametrize(
    ("cause", "cls", "kept"),
    [
        pytest.param(
            ssl.SSLCertVerificationError(
                1,
                "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                "unable to get local issuer certificate (_ssl.c:1006)",
            ),
            TLSError,
            "unable to get local issuer certificate",
            id="certificate-verify-failed",
        ),
        pytest.param(
            ssl.SSLEOFError(8, "EOF occurred in violation of protocol (_ssl.c:2427)"),
            Unavailable,
            "SSLError EOF occurred in violation of protocol",
            id="handshake-cut-short",
        ),
    ],
)
def test_ssl_errors_keep_their_reason(cause: ssl.SSLError, cls: type[KubeError], kept: str) -> None:
    """An SSLError becomes our class with OpenSSL's reason on one line, never "HTTP 0"."""
    error = urllib3.exceptions.SSLError(cause)
    with pytest.raises(KubeError) as caught:
        _api_raising(error).get(NODES, "n1")
    assert type(caught.value) is cls
    assert kept in str(caught.value)
    assert "HTTP 0" not in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.__cause__ is error
