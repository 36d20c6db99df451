"""The HTTP front: request parsing, fault injection, the request log, responses and watch streams.

Plain HTTP/1.1 on `ThreadingHTTPServer` (one daemon thread per connection, keep-alive like the
real server) so the official client talks to the fake through its real urllib3 stack. Watches
are streamed as newline-delimited JSON in chunked transfer encoding, one event per chunk.
Authentication is not checked: any bearer token (or none) is accepted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from typing_extensions import override

from . import discovery, tables
from .faults import FaultInjector
from .operations import Operations, ResourceRoute
from .requesthead import BadRequest, read_headers, request_line
from .requestlog import RecordedRequest, RequestLog
from .resources import ResourceRegistry
from .routing import is_api_path, parse_resource_path
from .status import (
    ApiError,
    bad_request,
    injected,
    internal_error,
    method_not_allowed,
    path_not_found,
)
from .watch import WatchSession

JSON = dict[str, Any]

_log = logging.getLogger(__name__)
_HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
_DISCONNECT_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
# How often an idle watch checks whether its client went away.
_WATCH_IDLE_CHECK_SECONDS = 0.5


@dataclass
class HttpContext:
    """What the handler needs from the server facade."""

    operations: Operations
    registry: ResourceRegistry
    faults: FaultInjector
    log: RequestLog
    git_version: str
    stopping: threading.Event = field(default_factory=threading.Event)
    # Guards active_watches and is notified whenever a watch stream opens or closes.
    watches_changed: threading.Condition = field(default_factory=threading.Condition)
    active_watches: list[ResourceRoute] = field(default_factory=list)
    # The sockets of the open watch streams (under watches_changed), for `cut_watches`.
    watch_connections: set[socket.socket] = field(default_factory=set)


@dataclass
class _Response:
    code: int
    body: JSON | str
    headers: dict[str, str] = field(default_factory=dict)


Query = dict[str, str]
_Outcome = _Response | tuple[ResourceRoute, WatchSession]


def _get(ops: Operations, route: ResourceRoute, query: Query, body: Any) -> _Outcome | None:
    if route.name is None:
        if route.watch_path or query.get("watch", "").lower() in ("true", "1"):
            return route, ops.watch(route, query)
        return _Response(200, ops.list(route, query))
    if route.subresource in (None, "status"):
        return _Response(200, ops.get(route))
    return None


def _post(ops: Operations, route: ResourceRoute, query: Query, body: Any) -> _Outcome | None:
    if route.name is None:
        return _Response(201, ops.create(route, body, query))
    handlers = {"eviction": ops.evict, "binding": ops.bind}
    handler = handlers.get(route.subresource or "")
    return None if handler is None else _Response(201, handler(route, body, query))


def _put(ops: Operations, route: ResourceRoute, query: Query, body: Any) -> _Outcome | None:
    if route.name is not None and route.subresource in (None, "status"):
        return _Response(200, ops.update(route, body, query))
    return None


def _delete(ops: Operations, route: ResourceRoute, query: Query, body: Any) -> _Outcome | None:
    if route.name is None:
        return _Response(200, ops.delete_collection(route, body, query))
    if route.subresource is None:
        return _Response(200, ops.delete(route, body, query))
    return None


class FakeHttpServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks its connections so stop() can close them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], context: HttpContext) -> None:
        super().__init__(address, ApiRequestHandler)
        self.context = context
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def track(self, conn: socket.socket, *, add: bool) -> None:
        """Register or forget a client connection."""
        with self._connections_lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def stop_serving(self) -> None:
        """End serve_forever() now instead of at its next poll timeout."""
        stopper = threading.Thread(target=self.shutdown, name="fake-apiserver-shutdown")
        stopper.start()
        host, port = self.server_address[:2]
        while stopper.is_alive():
            # A connection attempt wakes the accept loop, which then sees the shutdown request.
            with (
                contextlib.suppress(OSError),
                socket.create_connection((str(host), int(port)), timeout=1),
            ):
                pass
            stopper.join(timeout=0.05)

    def close_connections(self) -> None:
        """Shut down every open client connection (unblocks their handler threads)."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    @override
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away; log anything else once."""
        _log.debug("fake apiserver connection error from %s", client_address, exc_info=True)


class ApiRequestHandler(BaseHTTPRequestHandler):
    """Serves one connection's requests."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle plus the client's
    # delayed ACK adds ~40 ms to every response.
    disable_nagle_algorithm = True
    server: FakeHttpServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.track(self.connection, add=False)

    def handle(self) -> None:
        with contextlib.suppress(*_DISCONNECT_ERRORS, OSError):
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  # stdlib signature
        """Silence the per-request stderr lines of BaseHTTPRequestHandler."""

    @override
    def parse_request(self) -> bool:
        """The request line and headers, read by ``requesthead`` (not the email parser),
        with ``BaseHTTPRequestHandler``'s decisions on errors, keep-alive and ``Expect``.
        An error is answered with a status line even to a request line without a version
        (``http.server`` would answer as HTTP/0.9, which no client of the fake speaks)."""
        self.command = None  # type: ignore[assignment]  # as http.server, until it is read
        self.request_version = "HTTP/1.1"
        self.close_connection = True
        raw: bytes = self.raw_requestline  # type: ignore[attr-defined]  # set by handle_one_request
        self.requestline = str(raw, "iso-8859-1").rstrip("\r\n")
        try:
            self.command, self.path, version = request_line(raw)
            self.request_version = f"HTTP/{version[0]}.{version[1]}"
            self.headers = read_headers(self.rfile)  # type: ignore[assignment,arg-type]  # get/items only; a binary stream
        except BadRequest as error:
            self.send_error(error.status, error.message)
            return False
        connection = (self.headers.get("Connection") or "").lower()
        self.close_connection = connection == "close" or (
            version < (1, 1) and connection != "keep-alive"
        )
        expect = (self.headers.get("Expect") or "").lower()
        if expect == "100-continue" and version >= (1, 1):
            return self.handle_expect_100()
        return True

    def do_GET(self) -> None:
        """GET."""
        self._handle()

    def do_POST(self) -> None:
        """POST."""
        self._handle()

    def do_PUT(self) -> None:
        """PUT."""
        self._handle()

    def do_PATCH(self) -> None:
        """PATCH."""
        self._handle()

    def do_DELETE(self) -> None:
        """DELETE."""
        self._handle()

    # --- request ----------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    @staticmethod
    def _logged_body(raw: bytes) -> Any:
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def _handle(self) -> None:
        ctx = self.server.context
        url = urlsplit(self.path)
        query_lists = parse_qs(url.query, keep_blank_values=True)
        logged_query: dict[str, str | list[str]] = {
            k: v[0] if len(v) == 1 else v for k, v in query_lists.items()
        }
        query: Query = {k: v[-1] for k, v in query_lists.items()}
        raw = self._read_body()
        content_type = self.headers.get("Content-Type")
        entry = self._entry = ctx.log.record(
            RecordedRequest(
                monotonic=time.monotonic(),
                wall_time=time.time(),
                method=self.command,
                path=url.path,
                query=logged_query,
                body=self._logged_body(raw),
                content_type=content_type,
                headers=dict(self.headers.items()),
            )
        )
        # The log gets each response status *before* the response is written, so a client
        # that has its answer always finds the status in the log.
        stall = False
        for rule in ctx.faults.take(self.command, url.path, entry.is_watch):
            if rule.action == "stall":
                stall = True
            elif rule.action == "hang":
                with ctx.log.hanging(entry):
                    rule.freed.wait(rule.seconds)
            elif rule.action == "drop":
                ctx.log.completed(entry, None)
                self._drop()
                return
            else:
                self._fail(
                    entry, injected(rule.status, rule.message, rule.reason, rule.retry_after)
                )
                return
        try:
            outcome = self._dispatch(ctx, url.path, query, raw, content_type or "")
        except ApiError as error:
            self._fail(entry, error)
            return
        except Exception as exc:  # noqa: BLE001  # any bug in the fake must still answer a 500
            _log.exception("fake apiserver failed on %s %s", self.command, self.path)
            self._fail(entry, internal_error(f"fake apiserver bug: {exc!r}"))
            return
        if isinstance(outcome, tuple):
            route, session = outcome
            ctx.log.completed(entry, 200)
            self._stream_watch(ctx, route, session, stall=stall)
            return
        ctx.log.completed(entry, outcome.code)
        self._send(outcome)

    def _fail(self, entry: RecordedRequest, error: ApiError) -> None:
        self.server.context.log.completed(entry, error.code)
        self._send_error(error)

    def _parse_json(self, raw: bytes) -> Any:
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc

    def _dispatch(
        self, ctx: HttpContext, path: str, query: Query, raw: bytes, content_type: str
    ) -> _Outcome:
        path = path.rstrip("/") or "/"  # the real server serves /version/ and /apis/ too
        if path in _HEALTH_PATHS or path.startswith(tuple(p + "/" for p in _HEALTH_PATHS)):
            return _Response(200, "ok")
        if path == "/version":
            return _Response(200, discovery.version_info(ctx.git_version))
        if not is_api_path(path):
            raise path_not_found()
        route = parse_resource_path(path, ctx.registry)
        if route is not None:
            return self._dispatch_resource(ctx.operations, route, query, raw, content_type)
        if self.command != "GET":
            raise method_not_allowed()
        host, port = self.server.server_address[:2]
        address = f"{host!s}:{port}"
        doc = discovery.document(path, ctx.registry, address)
        if doc is None:
            raise path_not_found()
        return _Response(200, doc)

    def _dispatch_resource(
        self, ops: Operations, route: ResourceRoute, query: Query, raw: bytes, content_type: str
    ) -> _Outcome:
        if route.rt.read_only and (
            self.command != "GET"
            or route.watch_path
            or query.get("watch", "").lower() in ("true", "1")
        ):
            raise method_not_allowed()
        if self.command == "PATCH":
            if route.name is None or route.subresource not in (None, "status"):
                raise method_not_allowed()
            code, patched = ops.patch(route, raw, content_type, query)
            return _Response(code, patched)
        verbs = {"GET": _get, "POST": _post, "PUT": _put, "DELETE": _delete}
        verb = verbs.get(self.command)
        outcome = None if verb is None else verb(ops, route, query, self._parse_json(raw))
        if outcome is None:
            raise method_not_allowed()
        if (
            self.command == "GET"
            and route.rt.custom
            and isinstance(outcome, _Response)
            and isinstance(outcome.body, dict)
            and tables.wants_table(self.headers.get("Accept", ""))
        ):
            return _Response(outcome.code, tables.to_table(route.rt, outcome.body))
        return outcome

    # --- response ---------------------------------------------------------------------------

    def _send(self, response: _Response) -> None:
        if isinstance(response.body, str):
            data = response.body.encode()
            content_type = "text/plain; charset=utf-8"
        else:
            data = json.dumps(response.body, separators=(",", ":")).encode()
            content_type = "application/json"
        self.send_response(response.code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in response.headers.items():
            self.send_header(key, value)
        self._count(len(data))  # before the write: a client that has the body sees the count
        # Head and body in one write, as a real server's buffered writer sends them: two
        # writes made two TCP segments (Nagle is off), and the client one more read for
        # every response. ``end_headers`` would write the head alone.
        self._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]  # send_header's buffer
        self._headers_buffer.append(data)  # type: ignore[attr-defined]  # same
        self.flush_headers()

    def _count(self, sent: int) -> None:
        """Add body bytes to the request being answered (what a client received)."""
        entry: RecordedRequest | None = getattr(self, "_entry", None)
        if entry is not None:
            entry.response_bytes += sent

    def _send_error(self, error: ApiError) -> None:
        headers = {"Retry-After": str(error.retry_after)} if error.retry_after else {}
        self._send(_Response(error.code, error.to_status(), headers))

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except OSError:
            return True

    def _write_chunk(self, event: JSON) -> None:
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self._count(len(data))
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

    def _stream_watch(
        self, ctx: HttpContext, route: ResourceRoute, session: WatchSession, *, stall: bool = False
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        with ctx.watches_changed:
            ctx.active_watches.append(route)
            ctx.watch_connections.add(self.connection)
            ctx.watches_changed.notify_all()
        try:
            for event in session.start():
                self._write_chunk(event)
            if stall:  # a `stall_watches` fault: silence until the client gives up
                self.wfile.flush()
                while not ctx.stopping.is_set() and not self._client_gone():
                    ctx.faults.released.wait(_WATCH_IDLE_CHECK_SECONDS)
                self.close_connection = True
                return
            while not session.done and not ctx.stopping.is_set():
                for event in session.poll(_WATCH_IDLE_CHECK_SECONDS):
                    self._write_chunk(event)
                if self._client_gone():
                    self.close_connection = True
                    return
            for event in session.finish():
                self._write_chunk(event)
            self.wfile.write(b"0\r\n\r\n")
        except _DISCONNECT_ERRORS:
            self.close_connection = True
        finally:
            with ctx.watches_changed:
                ctx.active_watches.remove(route)
                ctx.watch_connections.discard(self.connection)
                ctx.watches_changed.notify_all()
