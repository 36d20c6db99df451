"""Blocking HTTP to the API server through the official client's connection pool.

Why: we use the client for what it is good at (kubeconfig, TLS, auth, token refresh) and
skip its typed models and its per-request serialization: a request goes straight to the
client's pool, its answer is read as bytes and parsed with ``json.loads``, which is several
times faster for pod lists. Every request has a client-side timeout.

This module is the wire: headers, the pool, timeouts, reading a body, and what a request
that got no answer becomes (a TLS problem is logged once, as an error). Which request each
verb sends is ``agent.kube.api``; what a non-2xx answer becomes is ``agent.kube.errors``; a
watch's stream of events is ``agent.kube.watchstream``. These methods block; async code
reaches them through ``AsyncKube``.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import structlog
import urllib3
from kubernetes import client as k8s_client

from agent.kube.errors import (
    KubeError,
    Timeout,
    TLSError,
    Unavailable,
    causes,
    certificate_problem,
    decode_error,
)
from agent.kube.httpconnections import use_lean_connections
from agent.kube.jsontypes import Decode, JsonObject

PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
_log = structlog.get_logger(subsystem="kube.api")  # the name its TLS lines always carried


def _encoded(body: Any) -> bytes | None:
    """A request body as bytes: ``None`` stays absent, bytes pass as they are."""
    if body is None or isinstance(body, bytes):
        return body
    return json.dumps(body, separators=(",", ":")).encode()


def _timeout(timeout: float | tuple[float, float] | None) -> urllib3.Timeout | None:
    """The client's reading of ``_request_timeout``: a total, or (connect, read)."""
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout) if timeout else None


class HttpTransport:
    """Requests over the official client's ``ApiClient`` (thread-safe, blocking)."""

    def __init__(self, api_client: k8s_client.ApiClient, request_timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self._lock = threading.Lock()
        self._pool: tuple[str, urllib3.HTTPConnectionPool, str] | None = None
        self._tls_problem: str | None = None
        """The certificate problem last logged; each new one is logged once, as an error."""

    def close(self) -> None:
        """Release the connection pool (one-shot commands; the agent keeps it to the end)."""
        cached, self._pool = self._pool, None
        self.api_client.close()  # type: ignore[no-untyped-call]  # the client ships untyped
        if cached is not None:
            cached[1].close()  # the manager forgets its pools on close, but leaves them open

    def open(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | tuple[float, float] | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send a request and return the unread response; non-2xx raise ``KubeError``.

        ``body`` is JSON-shaped data, or ``bytes`` already serialized (sent as they are).
        The request goes straight to the client's connection pool: its ``param_serialize``
        walks every header and body value and ``call_api`` serializes again, the next largest
        cost in an eviction's client CPU. What the client adds is kept: its default
        headers (User-Agent), cookie and authentication (``update_params_for_auth`` runs the
        token-refresh hook, as before), its query encoding, and its pool's TLS and proxy."""
        client = self.api_client
        headers = {"Accept": "application/json", **client.default_headers}
        if client.cookie:
            headers["Cookie"] = client.cookie
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        if content_type == PATCH_TYPES["json"] and not isinstance(body, list | bytes):
            # What the client did: a JSON patch must be a list, an object is a strategic one.
            headers["Content-Type"] = PATCH_TYPES["strategic"]
        query_params = [(key, value) for key, value in (query or {}).items() if value is not None]
        target = path
        if query_params:
            target += "?" + client.parameters_to_url_query(query_params, None)  # type: ignore[no-untyped-call]  # the client ships untyped
        client.update_params_for_auth(headers, query_params, ["BearerToken"], path, method, body)
        host = client.configuration.host
        options: dict[str, Any] = {
            "body": _encoded(body),
            "headers": headers,
            "timeout": _timeout(self.request_timeout if timeout is None else timeout),
            "preload_content": False,
        }
        try:
            direct = self._pool_for(host)
            if direct is None:
                raw = client.rest_client.pool_manager.request(method, host + target, **options)
            else:
                pool, base_path = direct
                raw = pool.urlopen(
                    method, base_path + target, redirect=False, assert_same_host=False, **options
                )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self._transport_error(method, path, error) from error
        self._tls_fine()
        if not 200 <= raw.status <= 299:
            try:
                data = raw.read()
            finally:
                raw.release_conn()
            raise decode_error(raw.status, data, raw.headers)
        return raw

    def _pool_for(self, host: str) -> tuple[urllib3.HTTPConnectionPool, str] | None:
        """The client's connection pool for ``host`` and the host's path (a server behind a
        path prefix), kept between requests; ``None`` behind a proxy (the proxy manager
        writes each request in absolute form, so it sends them).

        Asking the pool manager every time parsed the URL twice and rebuilt the pool's key;
        the pool itself, its connections and its TLS settings are the client's. ``close``
        closes it and empties the cache. Threads may race to fill the cache: they get the
        same pool from the manager, which has its own lock. Its new connections read
        response headers without the email parser (``httpconnections``)."""
        manager = self.api_client.rest_client.pool_manager
        if type(manager) is not urllib3.PoolManager:
            return None
        cached = self._pool
        if cached is None or cached[0] != host:
            base_path = (urllib3.util.parse_url(host).path or "").rstrip("/")
            pool = manager.connection_from_url(host)
            use_lean_connections(pool)
            cached = (host, pool, base_path)
            self._pool = cached
        return cached[1], cached[2]

    def _transport_error(self, method: str, path: str, error: Exception) -> KubeError:
        """Our error for a request that got no HTTP response, with the reason in its message."""
        problem = certificate_problem(error)
        if problem is not None:
            host = self.api_client.configuration.host
            tls = TLSError(f"{method} {path}: TLS certificate problem with {host}: {problem}")
            self._tls_failed(host, problem)
            return tls
        if isinstance(error, urllib3.exceptions.SSLError):
            # A handshake cut short, say: the class, then what OpenSSL said, on one line.
            reason = " ".join(str(error).split())
            return Unavailable(f"{method} {path} failed: SSLError {reason}")
        timed_out = (urllib3.exceptions.TimeoutError, TimeoutError)
        if any(isinstance(cause, timed_out) for cause in causes(error)):
            return Timeout(f"{method} {path} timed out: {error}")
        return Unavailable(f"{method} {path} failed: {error}")

    def _tls_failed(self, host: str, problem: str) -> None:
        # Every caller of every thread fails the same way: log once per distinct problem.
        with self._lock:
            new = problem != self._tls_problem
            self._tls_problem = problem
        if new:
            _log.error(
                "TLS certificate refused between the agent and the API server; check the "
                "kubeconfig's server address, certificate-authority and client certificate "
                "(retrying will not fix this)",
                host=host,
                problem=problem,
            )

    def _tls_fine(self) -> None:
        if self._tls_problem is None:  # the common case, read without the lock
            return
        with self._lock:
            solved, self._tls_problem = self._tls_problem, None
        if solved is not None:
            _log.info("TLS to the API server works again", solved=solved)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        decode: Decode = json.loads,
    ) -> JsonObject:
        raw = self.open(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )
        try:
            data = raw.read()
        except (urllib3.exceptions.TimeoutError, TimeoutError) as error:
            raise Timeout(f"{method} {path}: reading the response timed out") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise Unavailable(f"{method} {path}: reading the response failed: {error}") from error
        finally:
            raw.release_conn()
        try:
            parsed = decode(data) if data else {}
        except ValueError as error:
            # A truncated or garbled body is a transport problem: worth a retry, not a crash.
            raise Unavailable(f"{method} {path}: response is not JSON: {error}") from error
        except RecursionError as error:
            raise Unavailable(f"{method} {path}: response nested too deep to decode") from error
        return parsed if isinstance(parsed, dict) else {"items": parsed}

    def send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        timeout: float | None = None,
    ) -> None:
        """``request`` for a write whose answer nobody reads (an Eviction, an Event): the
        body is drained so the connection goes back to the pool, and never decoded. A
        non-2xx still raises our error with the Status reason (``open`` reads that body)."""
        raw = self.open(method, path, body=body, timeout=timeout)
        # The server said 2xx: the write happened. A body cut short is not worth a retry
        # (it would repeat the write); drain_conn swallows that and closes the connection.
        raw.drain_conn()
        raw.release_conn()
