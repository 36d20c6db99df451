"""The Prometheus client over real HTTP (a stand-in server on loopback): the request as
upstream's client sends it, retries by the one policy, a bounded answer, our own errors."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from agent.prometheus.client import PrometheusClient, PrometheusSettings
from agent.prometheus.errors import BadAnswer, Refused, TokenUnavailable, Unavailable
from agent.retrying import Backoff, RetryPolicy
from tests.harness.prometheus import QueryStandIn, vector

ANSWER = vector({"a": 0.5})
FAST = RetryPolicy(backoff=Backoff(initial=0.01, cap=0.01), attempts=3)


def _client(url: str, **settings: object) -> PrometheusClient:
    """A client with this test's settings over a 5 s timeout."""
    timeout = {"timeout": 5.0} | settings
    return PrometheusClient(PrometheusSettings(url=url, **timeout), retry=FAST)  # type: ignore[arg-type]


def test_a_query_is_posted_with_its_bearer_token() -> None:
    """A form POST of ``query`` and ``time``, with ``Authorization: Bearer`` from the token
    source, asked again at every query (a rotated token is used at once)."""
    tokens = iter(["first", "second"])
    with QueryStandIn(ANSWER) as stand_in:
        client = _client(stand_in.url, token=lambda: next(tokens))
        answer = client.query("up", 1.0)
        client.query("up", 2.0)
    assert [(s.labels["instance"], s.value) for s in answer.samples] == [("a", 0.5)]
    assert stand_in.methods == ["POST", "POST"]
    assert stand_in.authorizations == ["Bearer first", "Bearer second"]


def test_a_read_only_proxy_gets_a_get() -> None:
    """405 to the POST: the same query again as a GET, as upstream's client falls back."""
    with QueryStandIn(answers=[(405, b""), (200, ANSWER)]) as stand_in:
        answer = _client(stand_in.url).query("up", 1.0)
    assert stand_in.methods == ["POST", "GET"]
    assert len(answer.samples) == 1


def test_unavailable_is_retried_then_answered() -> None:
    """A 503 is repeated after the policy's backoff; the next answer counts."""
    with QueryStandIn(
        answers=[(503, {"status": "error", "error": "starting"}), (200, ANSWER)]
    ) as s:
        answer = _client(s.url).query("up", 1.0)
    assert len(s.methods) == 2
    assert len(answer.samples) == 1


def test_unavailable_gives_up_after_its_attempts() -> None:
    """Three attempts in all, then ``Unavailable`` with the status and the server's words."""
    with (
        QueryStandIn({"status": "error", "error": "overloaded"}, 503) as stand_in,
        pytest.raises(Unavailable, match="HTTP 503: overloaded"),
    ):
        _client(stand_in.url).query("up", 1.0)
    assert len(stand_in.methods) == 3


def test_a_bad_query_is_refused_at_once() -> None:
    """400 ``bad_data`` is not repeated: the query is wrong, not the server."""
    body = {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}
    with (
        QueryStandIn(body, 400) as stand_in,
        pytest.raises(Refused, match="bad_data: parse error at char 4") as caught,
    ):
        _client(stand_in.url).query("up(", 1.0)
    assert (caught.value.status, caught.value.error_type) == (400, "bad_data")
    assert len(stand_in.methods) == 1


def test_an_answer_past_the_bound_is_refused() -> None:
    """More than ``max_response_bytes`` is refused unparsed."""
    with (
        QueryStandIn(ANSWER) as stand_in,
        pytest.raises(BadAnswer, match="larger than 64 bytes"),
    ):
        _client(stand_in.url, max_response_bytes=64).query("up", 1.0)


def test_a_token_that_cannot_be_read_sends_nothing() -> None:
    """The token source's error comes out as is; no request goes without its token."""

    def broken() -> str:
        raise TokenUnavailable("the token file /nope cannot be read")

    with QueryStandIn(ANSWER) as stand_in, pytest.raises(TokenUnavailable):
        _client(stand_in.url, token=broken).query("up", 1.0)
    assert stand_in.methods == []


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers (a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_a_hung_server_times_out_each_attempt(silent_server: str) -> None:
    """Every attempt's answer is waited for ``timeout`` seconds at most, then the query
    fails as ``Unavailable`` saying it timed out."""
    with pytest.raises(Unavailable, match="timed out"):
        _client(silent_server, timeout=0.2).query("up", 1.0)
