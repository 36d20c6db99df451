"""A real Prometheus (Debian's ``prometheus``) scraping a tiny exporter the test serves, and
a stand-in that answers ``/api/v1/query`` with whatever the test says.

``RealPrometheus`` starts the binary on a free loopback port with a 1 s scrape of
``Exporter`` (``honor_labels``, so the exporter's ``instance`` label names the node, as a
recording rule over node-exporter would), and waits until the query answers one sample per
node (polled, bounded). Without the binary the test is skipped, saying so; ``scripts/test``
installs it. ``--web.config.file`` serves it over TLS when given a certificate.

``QueryStandIn`` is for what a real Prometheus cannot be made to do on purpose: answer
garbage, or check a bearer token (Prometheus itself has no bearer authentication; a proxy
in front of it usually does). It records each request's ``Authorization`` header.
"""

from __future__ import annotations

import http.server
import json
import shutil
import ssl
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pytest

from tests.harness.childprocess import stop_process
from tests.harness.ports import free_port
from tests.harness.waiting import WaitTimedOut, wait_until_blocking

STARTUP_SECONDS = 60.0
"""Bound on the wait for the first samples (never a speed assertion)."""


def prometheus_binary() -> str:
    """The ``prometheus`` binary, or skip the test saying why."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("Debian's prometheus package is needed (apt-get install prometheus)")
    return binary


class _Served(http.server.ThreadingHTTPServer):
    daemon_threads = True


class Exporter:
    """``/metrics`` with one gauge per node: ``<metric>{instance="<node>"} <value>``."""

    def __init__(self, metric: str, values: Mapping[str, float]) -> None:
        self.metric = metric
        self.values = dict(values)
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                lines = [f"# TYPE {exporter.metric} gauge"] + [
                    f'{exporter.metric}{{instance="{node}"}} {value!r}'
                    for node, value in sorted(exporter.values.items())
                ]
                body = ("\n".join(lines) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        self.server = _Served(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class RealPrometheus:
    """The real server, scraping ``exporter`` every second, on ``url``."""

    def __init__(
        self,
        exporter: Exporter,
        directory: Path,
        *,
        certificate: tuple[Path, Path] | None = None,
    ) -> None:
        self.binary = prometheus_binary()
        self.exporter = exporter
        self.directory = directory
        self.port = free_port()
        scheme = "https" if certificate else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.certificate = certificate
        self.process: subprocess.Popen[bytes] | None = None

    def _write_config(self) -> list[str]:
        config = self.directory / "prometheus.yml"
        config.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "scrape_configs": [
                        {
                            "job_name": "nodes",
                            "honor_labels": True,
                            "static_configs": [{"targets": [f"127.0.0.1:{self.exporter.port}"]}],
                        }
                    ],
                }
            )
        )
        args = [
            self.binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        if self.certificate:
            cert, key = self.certificate
            web = self.directory / "web.yml"
            web.write_text(
                json.dumps({"tls_server_config": {"cert_file": str(cert), "key_file": str(key)}})
            )
            args.append(f"--web.config.file={web}")
        return args

    def query(self, promql: str) -> list[Any]:
        """The vector ``promql`` answers now (``[]`` while Prometheus is not ready)."""
        context = (
            ssl.create_default_context(cafile=str(self.certificate[0]))
            if self.certificate
            else None
        )
        data = urllib.parse.urlencode({"query": promql}).encode()
        try:
            with urllib.request.urlopen(  # noqa: S310 - a loopback URL this harness built
                f"{self.url}/api/v1/query", data=data, timeout=5, context=context
            ) as response:
                body = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError):
            return []
        return list(body.get("data", {}).get("result") or [])

    def __enter__(self) -> Self:
        self.process = subprocess.Popen(  # fixed arguments, no shell
            self._write_config(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        wanted = set(self.exporter.values)
        process = self.process

        def scraped_every_node() -> bool:
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                raise AssertionError(f"prometheus exited {process.returncode}: {stderr}")
            return wanted <= {s["metric"].get("instance") for s in self.query(self.exporter.metric)}

        try:
            wait_until_blocking(
                scraped_every_node, "a sample of every node", STARTUP_SECONDS, interval=0.2
            )
        except WaitTimedOut:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            stop_process(self.process, 10)


class QueryStandIn:
    """Answers ``/api/v1/query`` with ``body`` and ``status``, or with each of ``answers``
    (status, body) in turn, the last one repeated. ``authorizations`` lists each request's
    ``Authorization`` header ("" when absent), ``methods`` its method."""

    def __init__(
        self,
        body: bytes | Mapping[str, Any] = b"",
        status: int = 200,
        *,
        answers: list[tuple[int, bytes | Mapping[str, Any]]] | None = None,
    ) -> None:
        self.answers = [(code, _bytes(data)) for code, data in (answers or [(status, body)])]
        self.authorizations: list[str] = []
        self.methods: list[str] = []
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                stand_in.authorizations.append(self.headers.get("Authorization") or "")
                stand_in.methods.append(self.command)
                index = min(len(stand_in.methods), len(stand_in.answers)) - 1
                code, data = stand_in.answers[index]
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        self.server = _Served(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()


def _bytes(data: bytes | Mapping[str, Any]) -> bytes:
    return data if isinstance(data, bytes) else json.dumps(data).encode()


def vector(samples: Mapping[str, float]) -> dict[str, Any]:
    """A successful instant-query answer with one sample per node."""
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"instance": node}, "value": [1.0, repr(value)]}
                for node, value in samples.items()
            ],
        },
    }
