"""An HTTPS endpoint with a self-signed certificate, for the client's TLS failures.

The fake API server speaks plain HTTP; what a wrong CA or a wrong server address does to the
agent only shows with a real TLS handshake. ``TlsEndpoint`` serves a fixed JSON body over
TLS on ``127.0.0.1`` with a certificate made on the spot by the ``openssl`` CLI (an argument
list, no shell), and writes kubeconfigs that do or do not trust it.
"""

from __future__ import annotations

import http.server
import json
import shutil
import ssl
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for ``127.0.0.1`` and its key; skips the test without ``openssl``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl CLI is needed to make a test certificate")
    cert, key = directory / "server.crt", directory / "server.key"
    subprocess.run(  # fixed arguments, no shell
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"kind": "Status", "gitVersion": "v1.37.0-tls"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


class _CountingServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.connections = 0
        """TCP connections accepted, handshake failed or not: each is one client attempt."""

    def get_request(self) -> tuple[Any, Any]:
        self.connections += 1  # only the serving thread writes it
        return super().get_request()


class TlsEndpoint:
    """A running HTTPS endpoint; use as a context manager."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.cert, key = self_signed_certificate(directory)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self._server = _CountingServer(context)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    @property
    def connections(self) -> int:
        return self._server.connections

    def write_kubeconfig(self, path: Path, *, trusted: bool) -> Path:
        """A kubeconfig for this endpoint; ``trusted`` names its certificate as the CA."""
        cluster: dict[str, Any] = {"server": self.url}
        if trusted:
            cluster["certificate-authority"] = str(self.cert)
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "tls", "cluster": cluster}],
            "users": [{"name": "tls", "user": {"token": "t"}}],
            "contexts": [{"name": "tls", "context": {"cluster": "tls", "user": "tls"}}],
            "current-context": "tls",
        }
        path.write_text(json.dumps(kubeconfig) + "\n")
        return path

    def __enter__(self) -> TlsEndpoint:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
