"""The telemetry listener: /metrics from our registry, /healthz and /readyz from Health."""

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from agent.config import AgentConfig
from agent.telemetry.health import Health
from agent.telemetry.http import DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT, TelemetryServer
from agent.telemetry.metrics import new_registry
from tests.harness.localhttp import get
from tests.harness.waiting import wait_until


@pytest.fixture
def served() -> Iterator[tuple[str, Health]]:
    health = Health()
    server = TelemetryServer("127.0.0.1:0", new_registry("agent"), health)
    server.start()
    host, port = server.address
    yield f"http://{host}:{port}", health
    server.close()


def test_metrics_serve_build_info(served: tuple[str, Health]) -> None:
    """/metrics exposes kubelet_companion_build_info from the process registry."""
    status, body = get(served[0] + "/metrics")
    assert status == 200
    assert 'kubelet_companion_build_info{component="agent"' in body


def test_readyz_follows_expected_checks(served: tuple[str, Health]) -> None:
    """/readyz is 503 listing the unmet check until it is ready, then 200."""
    url, health = served
    health.expect("watch:pods")
    assert get(url + "/readyz") == (503, "failed\n[-]watch:pods\n")
    health.set_ready("watch:pods")
    assert get(url + "/readyz?verbose") == (200, "ok\n[+]watch:pods\n")


def test_healthz_fails_when_a_task_failed(served: tuple[str, Health]) -> None:
    """/healthz turns 503 when a root task is marked failed."""
    url, health = served
    assert get(url + "/healthz")[0] == 200
    health.set_failed("watch-pods", "too many restarts")
    assert get(url + "/healthz")[0] == 503


def test_unknown_paths_are_404(served: tuple[str, Health]) -> None:
    """Only the three endpoints exist."""
    assert get(served[0] + "/debug")[0] == 404


def test_registries_are_per_process_not_global() -> None:
    """Two registries can coexist: nothing registers into the library default."""
    first, second = new_registry("agent"), new_registry("descheduler")
    assert first is not second


def _handler_threads() -> int:
    """Threads serving one connection each (ThreadingMixIn names them after their target)."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def _closed_by_server(connection: socket.socket) -> bool:
    try:
        return connection.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


@contextlib.contextmanager
def _listener(read_timeout: float, max_connections: int) -> Iterator[tuple[str, tuple[str, int]]]:
    server = TelemetryServer(
        "127.0.0.1:0",
        new_registry("agent"),
        Health(),
        read_timeout=read_timeout,
        max_connections=max_connections,
    )
    server.start()
    host, port = server.address
    try:
        yield f"http://{host}:{port}", (host, port)
    finally:
        server.close()


async def test_idle_connections_are_closed_and_their_threads_end_after_the_read_timeout() -> None:
    """A connection that sends nothing is closed after the read timeout and its thread ends."""
    before = _handler_threads()
    with _listener(read_timeout=0.5, max_connections=100) as (url, address):
        idle = [socket.create_connection(address) for _ in range(30)]
        try:
            await wait_until(lambda: _handler_threads() >= before + 30, "a thread per socket")
            assert get(url + "/healthz") == (200, "ok\n")
            await wait_until(lambda: all(_closed_by_server(c) for c in idle), "idle sockets closed")
            await wait_until(lambda: _handler_threads() == before, "handler threads gone")
        finally:
            for connection in idle:
                connection.close()


async def test_connections_beyond_the_cap_close_the_oldest_and_probes_still_answer() -> None:
    """Beyond max_connections the oldest connection is closed, so threads stay bounded."""
    before = _handler_threads()
    with _listener(read_timeout=60.0, max_connections=8) as (url, address):
        idle = [socket.create_connection(address) for _ in range(40)]
        try:
            await wait_until(lambda: all(_closed_by_server(c) for c in idle[:32]), "oldest closed")
            assert not any(_closed_by_server(c) for c in idle[32:])
            assert get(url + "/healthz") == (200, "ok\n")
            await wait_until(lambda: _handler_threads() <= before + 8, "threads within the cap")
        finally:
            for connection in idle:
                connection.close()


def test_the_config_defaults_are_the_listeners_defaults() -> None:
    """metricsReadTimeout and metricsMaxConnections default to what the listener uses alone."""
    config = AgentConfig()
    assert config.metrics_read_timeout == DEFAULT_READ_TIMEOUT
    assert config.metrics_max_connections == DEFAULT_MAX_CONNECTIONS
