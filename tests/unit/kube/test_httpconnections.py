"""The client pool's connections: response headers read as http.client reads them, and a
request's head written with its body."""

import http.client
import io

import pytest

from agent.kube.httpconnections import (
    LeanHeadResponse,
    LeanHTTPConnection,
    parse_header_lines,
    read_header_lines,
)

HEADER_BLOCKS = [
    pytest.param(
        b"Audit-Id: 1f2e\r\nCache-Control: no-cache, private\r\nContent-Type: application/json\r\n"
        b"X-Kubernetes-Pf-Flowschema-Uid: a-b\r\nDate: Tue, 24 Nov 2026 07:00:00 GMT\r\n"
        b"Content-Length: 187\r\n\r\n",
        id="api-server",
    ),
    pytest.param(b"\r\n", id="no-headers"),
    pytest.param(b"Warning: 299 - a\r\nWarning: 299 - b\r\n\r\n", id="repeated"),
    pytest.param(b"X-Empty:\r\nX-Spaces: \t padded \t\r\n\r\n", id="empty-and-padded"),
    pytest.param(b"Location: http://host:80/a?b=c:d\r\n\r\n", id="colon-in-value"),
    pytest.param(b"X-Latin: caf\xe9\r\n\r\n", id="latin-1"),
    pytest.param(b"Content-Type: text/plain\nContent-Length: 2\n\n", id="bare-newlines"),
    pytest.param(b"X-Folded: one\r\n two\r\nX-Next: 3\r\n\r\n", id="folded"),
    pytest.param(b"X-Fine: 1\r\nno colon here\r\n\r\n", id="no-colon"),
    pytest.param(b"Bad Name: x\r\n\r\n", id="space-in-name"),
    pytest.param(b": no name\r\nX-After: 1\r\n\r\n", id="empty-name"),
    pytest.param(b"From nobody Tue Nov 24\r\nX-A: 1\r\n\r\n", id="from-line"),
    pytest.param(b"X-Trailing-CR: v\r\r\n\r\n", id="stray-carriage-return"),
    pytest.param(b"X-Next-Line: caf\x85e\r\nX-B: 2\r\n\r\n", id="latin-1-next-line"),
    pytest.param(b"X-Form-Feed: a\x0cb\r\n\r\n", id="form-feed"),
]


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_header_blocks_parse_as_http_client_parses_them(block: bytes) -> None:
    """Names, values, order, payload and defects equal ``http.client.parse_headers``', and
    the same bytes are consumed from the stream."""
    ours_stream, theirs_stream = io.BytesIO(block + b"BODY"), io.BytesIO(block + b"BODY")
    ours = parse_header_lines(read_header_lines(ours_stream))
    theirs = http.client.parse_headers(theirs_stream)
    assert isinstance(ours, http.client.HTTPMessage)
    assert ours.items() == theirs.items()
    assert ours.get_payload() == theirs.get_payload()
    assert [type(d) for d in ours.defects] == [type(d) for d in theirs.defects]
    assert ours_stream.read() == theirs_stream.read() == b"BODY"


def test_too_many_header_lines_are_refused_as_http_client_refuses_them() -> None:
    """More than 100 header lines raise ``HTTPException``, a line over 64 KiB
    ``LineTooLong``: the limits that keep a bad server from exhausting memory."""
    many = b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n"
    with pytest.raises(http.client.HTTPException):
        read_header_lines(io.BytesIO(many))
    with pytest.raises(http.client.LineTooLong):
        read_header_lines(io.BytesIO(b"X-Long: " + b"a" * 70000 + b"\r\n\r\n"))


class _Socket:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, _mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))  # type: ignore[arg-type]  # a raw stream


RESPONSES = [
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "GET", id="length"),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "GET",
        id="chunked",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n"
        b"2\r\nhi\r\n0\r\n\r\n",
        "GET",
        id="chunked-wins-over-length",
    ),
    pytest.param(b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", "DELETE", id="204"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD", id="head"),
    pytest.param(
        b"HTTP/1.1 100 Continue\r\nX-Skip: 1\r\n\r\nHTTP/1.1 201 Created\r\n"
        b"Content-Length: 2\r\n\r\nok",
        "POST",
        id="continue-first",
    ),
    pytest.param(b"HTTP/1.0 200 OK\r\n\r\nuntil close", "GET", id="http-1.0-no-length"),
    pytest.param(b"HTTP/1.1 200 OK\r\n\r\nuntil close", "GET", id="no-length"),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        "GET",
        id="connection-close",
    ),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nabc", "GET", id="negative"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nabc", "GET", id="not-a-number"),
    pytest.param(
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}",
        "POST",
        id="429",
    ),
]


@pytest.mark.parametrize(("data", "method"), RESPONSES)
def test_responses_begin_and_read_as_http_client_does(data: bytes, method: str) -> None:
    """Status, reason, version, framing (length, chunked, close) and body are
    ``http.client.HTTPResponse``'s for the same bytes and method."""
    ours = LeanHeadResponse(_Socket(data), method=method)  # type: ignore[arg-type]  # makefile is all it uses
    theirs = http.client.HTTPResponse(_Socket(data), method=method)  # type: ignore[arg-type]  # same
    ours.begin()
    theirs.begin()
    for field in ("status", "reason", "version", "chunked", "length", "will_close"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.msg.items() == theirs.msg.items()
    assert ours.read() == theirs.read()


def test_a_bad_protocol_is_refused_as_http_client_refuses_it() -> None:
    """A status line that is not HTTP/1.x raises the same errors."""
    for data, error in (
        (b"HTTP/2.0 200 OK\r\n\r\n", http.client.UnknownProtocol),
        (b"ICY 200 OK\r\n\r\n", http.client.BadStatusLine),
    ):
        with pytest.raises(error):
            LeanHeadResponse(_Socket(data)).begin()  # type: ignore[arg-type]  # makefile only
        with pytest.raises(error):
            http.client.HTTPResponse(_Socket(data)).begin()  # type: ignore[arg-type]  # same


class _Recorder:
    """A connected socket that records each write."""

    def __init__(self, fail_first: bool = False) -> None:
        self.writes: list[bytes] = []
        self.fail_first = fail_first

    def sendall(self, data: bytes) -> None:
        if self.fail_first:
            self.fail_first = False
            raise BrokenPipeError
        self.writes.append(bytes(data))

    def settimeout(self, _timeout: float | None) -> None:
        pass


def _connection(sock: _Recorder) -> LeanHTTPConnection:
    connection = LeanHTTPConnection("127.0.0.1", 1)
    connection.sock = sock  # type: ignore[assignment]  # sendall and settimeout are all it uses
    return connection


def test_a_request_with_a_body_is_one_write() -> None:
    """The head and a bytes body leave in one write (one TCP segment), byte for byte what
    urllib3 would have written in two."""
    sock = _Recorder()
    _connection(sock).request("POST", "/e", body=b'{"a":1}', headers={"X-A": "1"})
    assert len(sock.writes) == 1
    head, _, body = sock.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /e HTTP/1.1\r\n")
    assert b"\r\nContent-Length: 7" in head
    assert body == b'{"a":1}'


def test_a_request_without_a_body_is_its_head() -> None:
    """A GET is written as its head alone, at once (nothing waits for a body)."""
    sock = _Recorder()
    _connection(sock).request("GET", "/g")
    assert len(sock.writes) == 1
    assert sock.writes[0].startswith(b"GET /g HTTP/1.1\r\n")
    assert sock.writes[0].endswith(b"\r\n\r\n")


def test_a_failed_write_leaves_nothing_held_for_the_next_request() -> None:
    """After a request whose write failed, the next request is written whole and alone,
    with no part of the failed one in front of it."""
    sock = _Recorder(fail_first=True)
    connection = _connection(sock)
    with pytest.raises(BrokenPipeError):
        connection.request("POST", "/first", body=b"1")
    connection._HTTPConnection__state = http.client._CS_IDLE  # type: ignore[attr-defined]  # as after a reset
    connection.request("POST", "/second", body=b"22")
    assert len(sock.writes) == 1
    assert sock.writes[0].startswith(b"POST /second ")
    assert sock.writes[0].endswith(b"\r\n\r\n22")


def test_a_request_refused_before_its_head_was_written_holds_nothing_back() -> None:
    """A request that fails while its head is built (a header value with a newline) leaves
    the connection writing the next request's head at once."""
    sock = _Recorder()
    connection = _connection(sock)
    with pytest.raises(ValueError, match="Invalid header"):
        connection.request("POST", "/bad", body=b"1", headers={"X-Bad": "a\nb"})
    # http.client's own state, as after a reset (urllib3 would close this connection;
    # what is pinned here is that nothing of ours is left over).
    connection._HTTPConnection__state = http.client._CS_IDLE  # type: ignore[attr-defined]  # its own
    connection._buffer.clear()  # type: ignore[attr-defined]  # the half-built head
    connection.request("GET", "/next")
    assert [write.split(b" ")[1] for write in sock.writes] == [b"/next"]
