"""Blocking raw-JSON calls to the API server through the official client's transport.

We use the client for what it is good at (kubeconfig, TLS, auth, token refresh) and skip
its typed models: responses are read as bytes and parsed with ``json.loads``, which is
several times faster for pod lists. Every call has a client-side timeout. These methods
block; async code reaches them through ``AsyncKube``.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from typing import Any

import structlog
import urllib3
from kubernetes import client as k8s_client

from agent.kube.errors import KubeError, Timeout, TLSError, Unavailable, error_for_status
from agent.kube.httpconnections import use_lean_connections
from agent.kube.resources import PODS, Resource

Decode = Callable[[bytes], Any]
"""Turns one response body (a list page, or one watch event line) into JSON-shaped data.
The default is ``json.loads``; a cache may pass a decoder that keeps only the fields it
reads (see ``agent.kube.reflector``)."""

PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
JsonObject = dict[str, Any]
UNDECODABLE = "UNDECODABLE"
"""The type of a watch event whose line did not decode (see ``WatchStream``)."""
_log = structlog.get_logger(subsystem="kube.api")
_CERTIFICATE_REASONS = ("CERTIFICATE", "UNKNOWN_CA", "UNSUPPORTED_CERT")
"""OpenSSL reasons (alerts from the server included) that mean a certificate was refused."""


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The error and everything it wraps: urllib3 keeps the cause in ``reason`` (``MaxRetryError``)
    or ``args[0]`` (``SSLError``)."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        reason = getattr(current, "reason", None)
        first_arg = current.args[0] if current.args else None
        pending.extend(
            candidate if isinstance(candidate, BaseException) else None
            for candidate in (current.__cause__, current.__context__, reason, first_arg)
        )


def certificate_problem(error: BaseException) -> str | None:
    """What was wrong with a certificate, if that is why a connection failed."""
    for cause in _causes(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return str(cause)
        if isinstance(cause, ssl.SSLError) and any(
            word in str(getattr(cause, "reason", None) or "") for word in _CERTIFICATE_REASONS
        ):
            return str(cause)
    if "CERTIFICATE_VERIFY_FAILED" in str(error):  # only the text survived
        return str(error).replace("\n", " ")
    return None


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _decode_error(status: int, data: bytes | None, headers: Any) -> KubeError:
    try:
        body = json.loads(data) if data else {}
    except ValueError:
        body = {"message": (data or b"").decode("utf-8", "replace")[:500]}
    if not isinstance(body, dict):
        body = {"message": str(body)}
    return error_for_status(status, body, _retry_after(headers))


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


class KubeApi:
    """Raw JSON over the official client's ``ApiClient`` (thread-safe, blocking)."""

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

    # -- transport ------------------------------------------------------------------

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
            raise _decode_error(raw.status, data, raw.headers)
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
        if any(isinstance(cause, timed_out) for cause in _causes(error)):
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

    # -- verbs ----------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> JsonObject:
        return self.request("GET", resource.path(namespace=namespace, name=name))

    def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        page_size: int = 500,
        decode: Decode = json.loads,
        timeout: float | None = None,
    ) -> JsonObject:
        """List every page; returns ``{"items": [...], "metadata": {"resourceVersion": ...}}``.

        ``timeout`` bounds each page's request (default: the client's request timeout).

        ``decode`` reads each page's bytes; it must return the page's JSON shape (a dict with
        ``items`` and ``metadata``), though it may leave out fields nobody reads. A decoder
        that projects as it decodes returns ``entries`` instead of ``items``; the answer
        then has ``entries`` too."""
        query: dict[str, Any] = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "resourceVersion": resource_version or None,
        }
        if resource_version != "0":  # the watch cache ignores limit for rv=0 anyway
            query["limit"] = page_size
        collected: list[Any] = []
        while True:
            page = self.request(
                "GET",
                resource.path(namespace=namespace),
                query=query,
                decode=decode,
                timeout=timeout,
            )
            metadata = page.get("metadata") or {}
            token = metadata.get("continue")
            field = "entries" if "entries" in page else "items"
            if not token and not collected:
                # One page (always so at resourceVersion=0): hand it over as decoded, so
                # a decoder's lazy ``items`` stays lazy.
                return {field: page.get(field) or [], "metadata": metadata}
            # Several pages: each is taken in whole before the next is fetched, so only
            # one page's bytes are held at a time.
            collected.extend(page.get(field) or [])
            if not token:
                return {field: collected, "metadata": metadata}
            query = {**query, "continue": token, "resourceVersion": None}

    def create(
        self, resource: Resource, obj: JsonObject, namespace: str | None = None
    ) -> JsonObject:
        return self.request("POST", resource.path(namespace=namespace), body=obj)

    def replace(
        self, resource: Resource, obj: JsonObject, namespace: str | None = None
    ) -> JsonObject:
        """PUT the whole object; with ``metadata.resourceVersion`` set, a stale copy is 409."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        return self.request("PUT", resource.path(namespace=namespace, name=name), body=obj)

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        patch_type: str = "json",
        namespace: str | None = None,
        subresource: str = "",
        timeout: float | None = None,
    ) -> JsonObject:
        return self.request(
            "PATCH",
            resource.path(namespace=namespace, name=name, subresource=subresource),
            body=patch,
            content_type=PATCH_TYPES[patch_type],
            timeout=timeout,
        )

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> JsonObject:
        body: JsonObject = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = preconditions
        return self.request(
            "DELETE", resource.path(namespace=namespace, name=name), body=body, timeout=timeout
        )

    def evict(
        self,
        name: str,
        namespace: str,
        *,
        grace_period_seconds: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """POST a policy/v1 Eviction; the answer (a Status) is not read."""
        body: JsonObject = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        self.send(
            "POST",
            PODS.path(namespace=namespace, name=name, subresource="eviction"),
            body=body,
            timeout=timeout,
        )

    def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        read_timeout: float = 90.0,
        decode: Decode = json.loads,
    ) -> WatchStream:
        """Open a watch; the server closes it after ``timeout_seconds``, and a silent
        connection fails after ``read_timeout`` so a half-open socket cannot hang us."""
        raw = self.open(
            "GET",
            resource.path(namespace=namespace),
            query={
                "watch": "true",
                "resourceVersion": resource_version or None,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": timeout_seconds,
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
            },
            timeout=(self.request_timeout, read_timeout),
        )
        return WatchStream(raw, decode)


class WatchStream:
    """Decoded watch events from one response.

    Concurrency: the thread that iterates owns the response and closes it when it is done.
    ``close`` may be called from any other thread: it only shuts the socket down for
    reading, which wakes the blocked reader at once (a plain close from another thread would
    wait for the reader's buffer lock, i.e. for the next event or bookmark, and could tear
    the response down under the reader's feet).
    """

    def __init__(self, raw: urllib3.BaseHTTPResponse, decode: Decode = json.loads) -> None:
        self._raw = raw
        self._decode = decode
        self._lock = threading.Lock()
        self._reader: int | None = None
        self.closed = False

    def __iter__(self) -> Iterator[JsonObject]:
        with self._lock:
            self._reader = threading.get_ident()
        buffer = b""
        try:
            for chunk in self._raw.stream(65536, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield self._decode_whole(line)
            if buffer.strip():
                yield self._decode(buffer)  # a line cut short: the stream broke
        except (urllib3.exceptions.TimeoutError, TimeoutError) as error:
            if not self.closed:
                raise Timeout(f"watch read timed out: {error}") from error
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            if not self.closed:
                raise Unavailable(f"watch stream broke: {error}") from error
        finally:
            with self._lock:
                self._reader = None
            self._release()

    def _decode_whole(self, line: bytes) -> JsonObject:
        """One complete event line; one that does not decode (an object nested too deep
        to read, say) is handed on as ``UNDECODABLE`` for the reader to skip and count:
        reconnecting would only read it again."""
        try:
            return self._decode(line)  # type: ignore[no-any-return]  # a decoder returns an event
        except (ValueError, RecursionError) as error:
            return {"type": UNDECODABLE, "object": {}, "error": f"{type(error).__name__}: {error}"}

    def close(self) -> None:
        with self._lock:
            self.closed = True
            reading_elsewhere = self._reader not in (None, threading.get_ident())
        if reading_elsewhere:
            # Wake the reader; it releases the response itself. Nothing to do if the
            # connection is already gone.
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                self._raw.shutdown()
        else:
            self._release()

    def _release(self) -> None:
        # Closing a broken stream has nothing left to report.
        with contextlib.suppress(urllib3.exceptions.HTTPError, OSError):
            self._raw.close()
