"""Reading a request's line and headers without the ``email`` package.

``BaseHTTPRequestHandler.parse_request`` reads the headers through ``http.client``, which
hands them to ``email.parser``: with the lookups on the resulting ``Message``, that was
about half the fake's CPU per request, and the eviction benchmark runs the fake on the
same two CPUs as the client it measures. HTTP/1.x headers are ``Name: value`` lines up to
an empty one, which is all a client of this server sends (no folded lines), so they are
read here directly. What ``parse_request`` decides from them is kept: the status for a
malformed request line, keep-alive by version and ``Connection``, and ``Expect:
100-continue``.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import BinaryIO

_MAX_LINE = 65536
_MAX_HEADERS = 100
_END = (b"\r\n", b"\n", b"")


class RequestHeaders:
    """A request's headers in arrival order; ``get`` ignores case and gives the first."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs
        self._first: dict[str, str] = {}
        for name, value in pairs:
            self._first.setdefault(name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._first.get(name.lower(), default)

    def items(self) -> list[tuple[str, str]]:
        return list(self._pairs)


class BadRequest(Exception):
    """The request cannot be served: ``status`` and ``message`` are what to answer."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def request_line(raw: bytes) -> tuple[str, str, tuple[int, int]]:
    """Method, target and (major, minor) version of an HTTP/1.x request line."""
    words = str(raw, "iso-8859-1").rstrip("\r\n").split()
    if len(words) != 3:  # method, target, version
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({words!r})")
    command, target, version = words
    major, dot, minor = version.removeprefix("HTTP/").partition(".")
    if not version.startswith("HTTP/") or not dot or not (major + minor).isdigit():
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
    if int(major) != 1:
        raise BadRequest(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version ({version})")
    if target.startswith("//"):  # as http.server: not a scheme-relative URL
        target = "/" + target.lstrip("/")
    return command, target, (int(major), int(minor))


def read_headers(stream: BinaryIO) -> RequestHeaders:
    """The header lines up to the empty one."""
    pairs: list[tuple[str, str]] = []
    while True:
        line = stream.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
        if line in _END:
            return RequestHeaders(pairs)
        if len(pairs) >= _MAX_HEADERS:
            raise BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
        name, colon, value = str(line, "iso-8859-1").partition(":")
        if not colon or not name.strip() or name != name.strip():
            raise BadRequest(HTTPStatus.BAD_REQUEST, f"Bad header line ({line!r})")
        pairs.append((name, value.strip()))
