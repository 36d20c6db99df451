"""Reading a local HTTP endpoint (probes, metrics) the way a test needs it: the status and
the body whatever the status, and a server that is still starting waited for."""

from __future__ import annotations

import urllib.error
import urllib.request

from tests.harness.waiting import wait_until_blocking

NOT_LISTENING = 0
"""The status of a URL nothing answers on (connection refused, reset, timed out)."""


def get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """``GET url``: its status and body (an error status's too); ``NOT_LISTENING`` and an
    empty body when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - tests' URLs
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return NOT_LISTENING, ""


def get_when_ok(url: str, timeout: float) -> str:
    """The body of ``url`` once it answers 200 (a process still starting, or not ready, is
    waited for); the test fails after ``timeout`` seconds with the last answer."""
    last: list[tuple[int, str]] = []

    def ok() -> tuple[str] | None:  # a tuple: an empty body is an answer too
        last[:] = [get(url, timeout=1)]
        status, body = last[0]
        return (body,) if status == 200 else None

    (body,) = wait_until_blocking(
        ok, lambda: f"200 from {url}, last {last}", timeout, interval=0.05
    )
    return str(body)
