"""The API client pool's connections: response headers read without the ``email`` parser,
and a request's head sent with its body.

``http.client`` hands every response's header block to ``email.parser``, whose generic
machinery (a feed parser, MIME checks, a policy per header) was about a third of the
client's CPU per request: the descheduler's eviction pool is bound by that CPU. A header
block from an API server is ``Name: value`` lines, which this module reads straight into
the same ``HTTPMessage`` the email parser would make. Any line it does not recognise
(folded continuations, a ``From `` line, a name the email parser would not take) sends the
whole block to the email parser, so the result is the same in every case; a test compares
the two on a table of header blocks.

``LeanHeadResponse.begin`` is ``http.client.HTTPResponse.begin`` (the same in Python 3.11 to
3.13) with only the header parsing swapped; the connection classes plug it into urllib3,
which reads the message exactly as before. They also send a request's head together with
its body (``_HeadWithBody``), one write where urllib3 made two.
"""

from __future__ import annotations

import email.parser
import http.client
import re
import socket
from typing import Any, cast

import urllib3

_MAXLINE = 65536
_MAXHEADERS = 100
_END = (b"\r\n", b"\n", b"")
_NAME = re.compile(r"[\041-\071\073-\176]+")
"""A header name the email parser takes: printable ASCII without space or colon."""


def read_header_lines(fp: Any) -> list[bytes]:
    """The header lines and the empty one ending them, with ``http.client``'s limits."""
    lines: list[bytes] = []
    while True:
        line = fp.readline(_MAXLINE + 1)
        if len(line) > _MAXLINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > _MAXHEADERS:
            raise http.client.HTTPException(f"got more than {_MAXHEADERS} headers")
        if line in _END:
            return lines


def parse_header_lines(lines: list[bytes]) -> http.client.HTTPMessage:
    """What ``http.client.parse_headers`` makes of the same lines."""
    message = http.client.HTTPMessage()
    pairs = []
    for raw in lines:
        if raw in _END:
            break
        line = str(raw, "iso-8859-1")
        name, colon, value = line.partition(":")
        # The email parser also breaks lines at a lone CR and at the other characters
        # ``str.splitlines`` breaks at (0x85 in Latin-1, for one).
        if not colon or _NAME.fullmatch(name) is None or len(line.splitlines()) != 1:
            return _by_email_parser(lines)
        # The email parser's compat32 reading of one unfolded header line.
        pairs.append((name, value.lstrip(" \t").rstrip("\r\n")))
    for name, value in pairs:
        message.set_raw(name, value)
    message.set_payload("")
    return message


def _by_email_parser(lines: list[bytes]) -> http.client.HTTPMessage:
    text = b"".join(lines).decode("iso-8859-1")
    return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)


class LeanHeadResponse(http.client.HTTPResponse):
    """An ``http.client`` response whose headers are read by ``parse_header_lines``."""

    def begin(self) -> None:
        if cast("http.client.HTTPMessage | None", self.headers) is not None:
            return  # already begun (``__init__`` leaves it None; typeshed does not say so)
        while True:  # skip any 100 Continue
            version, status, reason = self._read_status()  # type: ignore[attr-defined]  # http.client's own
            if status != http.client.CONTINUE:
                break
            read_header_lines(self.fp)
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = parse_header_lines(read_header_lines(self.fp))
        encoding = self.headers.get("transfer-encoding")
        self.chunked = bool(encoding and encoding.lower() == "chunked")
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._check_close()  # type: ignore[attr-defined]  # http.client's own
        self.length = self._length(status)
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True

    def _length(self, status: int) -> int | None:
        """``Content-Length`` as ``begin`` reads it: ignored when chunked or not a natural
        number, and 0 for a status or method that has no body."""
        if (
            status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
            or 100 <= status < 200  # the 1xx codes
            or self._method == "HEAD"  # type: ignore[attr-defined]  # http.client's own
        ):
            return 0
        declared = self.headers.get("content-length")
        if not declared or self.chunked:
            return None
        try:
            length = int(declared)
        except ValueError:
            return None
        return length if length >= 0 else None


class _HeadWithBody:
    """Sends a request's head and its bytes body in one write.

    urllib3 writes the head (``endheaders``) and then the body: two TCP segments, as the
    client turns Nagle off, and two reads for the server. The head of a request with a
    bytes body is held back for the body's ``send``. Mixed into the connection classes.
    """

    _hold_head = False
    _held_head: bytes | None = None

    def request(self, method: str, url: str, body: Any = None, *args: Any, **kwargs: Any) -> None:
        # Set afresh for each request, so one that failed half-way leaves nothing behind.
        self._hold_head = type(body) is bytes and bool(body)
        self._held_head = None
        super().request(method, url, body, *args, **kwargs)  # type: ignore[misc]  # the connection's

    def send(self, data: Any) -> None:
        if self._hold_head:  # the head, from ``endheaders``
            self._hold_head = False
            self._held_head = data
            return
        held, self._held_head = self._held_head, None
        super().send(data if held is None else held + data)  # type: ignore[misc]  # same


class LeanHTTPConnection(_HeadWithBody, urllib3.connection.HTTPConnection):
    response_class = LeanHeadResponse


class LeanHTTPSConnection(_HeadWithBody, urllib3.connection.HTTPSConnection):
    response_class = LeanHeadResponse


KEEPALIVE_OPTIONS = [
    (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    *(
        (socket.IPPROTO_TCP, getattr(socket, name), value)
        for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
        if hasattr(socket, name)
    ),
]
"""TCP keepalive after 30 s of silence, every 10 s, 3 probes: a dead peer is found in about a
minute (Go's dialer, which client-go uses, keeps alive every 30 s). A watch can then wait
for the server to end it without a short read timeout."""


def use_lean_connections(pool: urllib3.HTTPConnectionPool) -> None:
    """Make ``pool``'s new connections the lean ones (headers read here, head sent with the
    body), if they are urllib3's own connection classes; anything else is left as it is.
    Either way they get TCP keepalive."""
    if pool.ConnectionCls is urllib3.connection.HTTPSConnection:
        pool.ConnectionCls = LeanHTTPSConnection
    elif pool.ConnectionCls is urllib3.connection.HTTPConnection:
        pool.ConnectionCls = LeanHTTPConnection
    options = pool.conn_kw.get("socket_options")
    base = (
        list(options)
        if options is not None
        else urllib3.connection.HTTPConnection.default_socket_options
    )
    pool.conn_kw["socket_options"] = [*base, *KEEPALIVE_OPTIONS]
