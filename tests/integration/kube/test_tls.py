"""A certificate the client does not trust: a configuration error with its reason, said once."""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from agent.config import AgentConfig
from agent.config.loader import parse_document
from agent.doctor.command import check_cluster
from agent.kube.api import KubeApi
from agent.kube.backoff import Backoff
from agent.kube.connection import connect
from agent.kube.errors import KubeConfigError, TLSError, Unavailable
from agent.kube.reflector import Reflector
from agent.kube.resources import NODES, PODS
from tests.harness.tls import TlsEndpoint
from tests.harness.waiting import wait_until


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[TlsEndpoint]:
    with TlsEndpoint(tmp_path) as running:
        yield running


def _api(endpoint: TlsEndpoint, tmp_path: Path, *, trusted: bool) -> KubeApi:
    path = endpoint.write_kubeconfig(tmp_path / f"kubeconfig-{trusted}", trusted=trusted)
    connection = connect(str(path))
    assert connection is not None
    return KubeApi(connection.api_client, request_timeout=5.0)


def test_untrusted_certificate_is_a_tls_error_with_its_reason(
    endpoint: TlsEndpoint, tmp_path: Path
) -> None:
    """An unverifiable server certificate is a TLSError (a config error) naming the cause."""
    api = _api(endpoint, tmp_path, trusted=False)
    with pytest.raises(TLSError) as caught:
        api.get(NODES, "n1")
    error = caught.value
    assert isinstance(error, KubeConfigError)
    assert not isinstance(error, Unavailable)  # not retried as if it were an outage
    assert "CERTIFICATE_VERIFY_FAILED" in str(error)
    assert "self-signed certificate" in str(error)
    assert endpoint.url in str(error)
    assert "HTTP 0" not in str(error)
    assert error.__cause__ is not None  # the client's exception is kept, as the cause


def test_the_same_endpoint_works_once_trusted(endpoint: TlsEndpoint, tmp_path: Path) -> None:
    """With the certificate as the kubeconfig's CA, the same call succeeds (the control)."""
    api = _api(endpoint, tmp_path, trusted=True)
    assert api.request("GET", "/version")["gitVersion"] == "v1.37.0-tls"


def test_a_tls_problem_is_logged_once_as_an_error_until_it_changes(
    endpoint: TlsEndpoint, tmp_path: Path
) -> None:
    """Repeated failures with the same certificate problem log one error, not one per call."""
    api = _api(endpoint, tmp_path, trusted=False)
    with capture_logs() as logs:
        for _ in range(3):
            with pytest.raises(TLSError):
                api.get(NODES, "n1")
    errors = [entry for entry in logs if entry["log_level"] == "error"]
    assert len(errors) == 1
    assert "CERTIFICATE_VERIFY_FAILED" in errors[0]["problem"]


async def test_reflector_logs_a_tls_problem_once_and_keeps_trying(
    endpoint: TlsEndpoint, tmp_path: Path
) -> None:
    """A watch on an untrusted server says so once, as an error, never as "HTTP 0" warnings."""
    api = _api(endpoint, tmp_path, trusted=False)
    fast = Backoff(initial=0.01, factor=1.0, cap=0.01, jitter=0.0)
    reflector = Reflector(api, PODS, name="pods", backoff=fast)
    with capture_logs() as logs:
        task = asyncio.create_task(reflector.run())
        try:
            await wait_until(lambda: endpoint.connections >= 4, "the reflector's retries")
        finally:
            reflector.stop()
            await asyncio.wait_for(task, 10)
    from_reflector = [entry for entry in logs if entry.get("reflector") == "pods"]
    assert [entry["log_level"] for entry in from_reflector] == ["error"]
    assert "CERTIFICATE_VERIFY_FAILED" in from_reflector[0]["error"]
    assert not reflector.synced.is_set()


def test_doctor_shows_an_untrusted_certificate_as_misconfigured(
    endpoint: TlsEndpoint, tmp_path: Path
) -> None:
    """doctor's cluster line calls a certificate problem a misconfiguration, with the reason."""
    kubeconfig = endpoint.write_kubeconfig(tmp_path / "kubeconfig", trusted=False)
    config = parse_document(AgentConfig, f"kubeconfig: {kubeconfig}", "test")
    status = check_cluster(config)
    assert status.mode == "misconfigured"
    assert "CERTIFICATE_VERIFY_FAILED" in status.detail
