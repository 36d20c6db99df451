"""The HTTP listener for ``/metrics``, ``/healthz`` and ``/readyz``.

It runs in its own daemon thread (``ThreadingHTTPServer``) so a slow scrape never stalls
the event loop, and binds to ``metricsBindAddress`` (loopback by default).

In a DaemonSet it listens on ``0.0.0.0``, reachable from every pod, so it must not be a way
to exhaust the agent: a thread per connection that waits forever for a request would let
idle sockets pile up threads until the memory limit kills the agent (and drops its shutdown
lock). So every connection has a read timeout, and at most ``max_connections`` are open at
once: a new connection beyond that closes the oldest one, so a fresh probe always gets in
(probes and scrapes send their request at once; an old connection is most likely idle).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
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


DEFAULT_READ_TIMEOUT = 5.0
"""Seconds a connection may take to send its request (and to take our reply);
``metricsReadTimeout`` in the agent's config."""
DEFAULT_MAX_CONNECTIONS = 64
"""Connections (each with its handler thread) open at once, more close the oldest;
``metricsMaxConnections`` in the agent's config."""


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, with at most ``max_connections`` of them open at once."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], max_connections: int
    ) -> None:
        self.max_connections = max_connections
        # Accept (serve_forever's thread) adds, handler threads remove: one lock for both.
        self._open: OrderedDict[socket.socket, None] = OrderedDict()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open[request] = None
            oldest = [self._open.popitem(last=False)[0] for _ in range(self.open_beyond_cap)]
        for connection in oldest:
            # Only shut down, never close, another thread's socket: its handler thread then
            # reads EOF, finishes, and closes it itself. If it closed it a moment ago, the
            # socket object knows and this raises instead of touching a reused descriptor.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        super().process_request(request, client_address)

    @property
    def open_beyond_cap(self) -> int:
        return max(0, len(self._open) - self.max_connections)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)


class _IPv6Server(_BoundedServer):
    address_family = socket.AF_INET6


class TelemetryServer:
    """Serve metrics and probes on ``address`` until ``close``."""

    def __init__(
        self,
        address: str,
        registry: CollectorRegistry,
        health: Health,
        *,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        # StreamRequestHandler puts ``timeout`` on the connection's socket; a request that
        # does not arrive in time ends the handler (BaseHTTPRequestHandler closes it).
        attributes = {"registry": registry, "health": health, "timeout": read_timeout}
        handler = type("Handler", (_Handler,), attributes)
        host, port = split_host_port(address)
        server_class = _IPv6Server if ":" in host else _BoundedServer
        self._server = server_class((host, port), handler, max_connections)
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
