"""The HTTP listener for ``/metrics``, ``/healthz`` and ``/readyz``.

It runs in its own daemon thread (``ThreadingHTTPServer``) so a slow scrape never stalls
the event loop, and binds to ``metricsBindAddress`` (loopback by default).
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from agent.telemetry.health import Health, HealthReport


def split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


class _Handler(BaseHTTPRequestHandler):
    registry: ClassVar[CollectorRegistry]
    health: ClassVar[Health]
    server_version = "kubelet-companion"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Access logs would drown the structured log at every scrape."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/metrics":
            encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
            self._reply(200, encoder(self.registry), content_type)
        elif url.path == "/healthz":
            self._report(self.health.liveness(), url.query)
        elif url.path == "/readyz":
            self._report(self.health.readiness(), url.query)
        else:
            self._reply(404, b"not found\n", "text/plain")

    def _report(self, report: HealthReport, query: str) -> None:
        verbose = "verbose" in parse_qs(query, keep_blank_values=True)
        lines = ["ok" if report.ok else "failed"]
        if verbose or not report.ok:
            lines += [f"[{'+' if ok else '-'}]{name}" for name, ok in sorted(report.checks.items())]
        self._reply(200 if report.ok else 503, ("\n".join(lines) + "\n").encode(), "text/plain")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class TelemetryServer:
    """Serve metrics and probes on ``address`` until ``close``."""

    def __init__(self, address: str, registry: CollectorRegistry, health: Health) -> None:
        handler = type("Handler", (_Handler,), {"registry": registry, "health": health})
        host, port = split_host_port(address)
        server_class = _IPv6Server if ":" in host else ThreadingHTTPServer
        self._server = server_class((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="telemetry-http", daemon=True
        )

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
