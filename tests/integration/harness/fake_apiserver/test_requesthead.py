"""The fake API server reads request lines and headers as ``http.server`` decides on them."""

from __future__ import annotations

import re
import socket
from typing import BinaryIO
from urllib.parse import urlsplit

import pytest

from tests.harness.fake_apiserver import FakeApiServer


def _response(reader: BinaryIO) -> bytes:
    """One response (after any interim ``100 Continue``), its body read by its length."""
    head = block = b""
    while not block or block.startswith(b"HTTP/1.1 100 "):
        lines = [reader.readline()]
        while lines[-1] not in (b"\r\n", b""):
            lines.append(reader.readline())
        block = b"".join(lines)
        head += block
    length = re.search(rb"(?i)content-length: *(\d+)", block)
    return head + (reader.read(int(length.group(1))) if length else b"")


def _exchange(server: FakeApiServer, data: bytes) -> tuple[bytes, bool]:
    """Send raw bytes; return the response, and whether the connection still served a
    second request after it (a second answer is the sign, not a silence)."""
    address = urlsplit(server.url)
    with socket.create_connection((address.hostname, address.port), timeout=5) as conn:
        reader = conn.makefile("rb")
        conn.sendall(data)
        first = _response(reader)
        try:
            conn.sendall(b"GET /version HTTP/1.1\r\nConnection: close\r\n\r\n")
            second = reader.read()  # to the end: the server closes after this one
        except OSError:  # reset: the server had closed already
            second = b""
        return first, second.startswith(b"HTTP/1.1 200 ")


def test_headers_are_read_whatever_their_case(fake_apiserver: FakeApiServer) -> None:
    """A body sized by ``content-length`` in any case is read, and the request log keeps
    each header as sent."""
    body = b'{"metadata":{"name":"cm"}}'
    reply, kept = _exchange(
        fake_apiserver,
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        b"content-TYPE: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body),
    )
    assert reply.startswith(b"HTTP/1.1 201 ")
    assert kept  # HTTP/1.1 keeps the connection
    (logged,) = fake_apiserver.requests("POST", "/configmaps")
    assert logged.headers["content-TYPE"] == "application/json"
    assert logged.body == {"metadata": {"name": "cm"}}


@pytest.mark.parametrize(
    ("request_head", "keeps_alive"),
    [
        pytest.param(b"GET /version HTTP/1.1\r\n\r\n", True, id="1.1"),
        pytest.param(b"GET /version HTTP/1.1\r\nConnection: close\r\n\r\n", False, id="close"),
        pytest.param(b"GET /version HTTP/1.0\r\n\r\n", False, id="1.0"),
        pytest.param(
            b"GET /version HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", True, id="1.0-keep-alive"
        ),
    ],
)
def test_keep_alive_follows_the_version_and_connection_header(
    fake_apiserver: FakeApiServer, request_head: bytes, keeps_alive: bool
) -> None:
    """HTTP/1.1 stays open unless ``Connection: close``; HTTP/1.0 closes unless asked."""
    reply, kept = _exchange(fake_apiserver, request_head)
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert kept is keeps_alive


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        pytest.param(b"GET\r\n\r\n", b"400", id="one-word"),
        pytest.param(b"GET /version HTTP/1.1 extra\r\n\r\n", b"400", id="four-words"),
        pytest.param(b"GET /version HTTX/1.1\r\n\r\n", b"400", id="not-http"),
        pytest.param(b"GET /version HTTP/2.0\r\n\r\n", b"505", id="http-2"),
        pytest.param(b"GET /version HTTP/1.1\r\nno colon\r\n\r\n", b"400", id="bad-header"),
        pytest.param(
            b"GET /version HTTP/1.1\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n", b"431", id="too-many"
        ),
    ],
)
def test_a_malformed_request_is_refused_and_the_connection_closed(
    fake_apiserver: FakeApiServer, request_head: bytes, status: bytes
) -> None:
    """A request line or header block that cannot be read gets an error status, as
    ``http.server`` answers it, and the connection is closed."""
    reply, kept = _exchange(fake_apiserver, request_head)
    assert reply.split(b" ")[1] == status
    assert not kept


def test_expect_continue_is_answered_before_the_body(fake_apiserver: FakeApiServer) -> None:
    """``Expect: 100-continue`` gets ``100 Continue`` first, then the response."""
    reply, _ = _exchange(fake_apiserver, b"GET /version HTTP/1.1\r\nExpect: 100-continue\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 100 Continue\r\n")
    assert b"HTTP/1.1 200 OK\r\n" in reply
