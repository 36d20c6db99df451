"""insecure-skip-tls-verify: one log line that TLS is unverified, no warning per request."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import structlog

from agent.kube.api import KubeApi
from agent.kube.connection import connect


class _VersionHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"gitVersion": "v1.37.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Quiet: the test reads results, not access logs."""


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server with a self-signed certificate, answering /version."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    server = HTTPServer(("127.0.0.1", 0), _VersionHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _insecure_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def test_unverified_tls_is_logged_once_and_requests_do_not_warn(
    https_server: str, tmp_path: Path
) -> None:
    """Calls over unverified TLS raise no InsecureRequestWarning; one log line says it is off."""
    kubeconfig = _insecure_kubeconfig(tmp_path / "kubeconfig", https_server)
    with (
        warnings.catch_warnings(record=True) as recorded,
        structlog.testing.capture_logs() as logs,
    ):
        warnings.simplefilter("always")
        connection = connect(str(kubeconfig))
        assert connection is not None
        api = KubeApi(connection.api_client, request_timeout=5.0)
        versions = [api.request("GET", "/version")["gitVersion"] for _ in range(3)]
        connect(str(kubeconfig))
        connection.api_client.close()  # type: ignore[no-untyped-call]
    assert versions == ["v1.37.0"] * 3
    assert [str(w.message) for w in recorded] == []
    said = [entry for entry in logs if "TLS verification is off" in entry["event"]]
    assert len(said) == 1
    assert said[0]["source"] == f"kubeconfig {kubeconfig}"
