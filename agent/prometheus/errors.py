"""Our own errors for a Prometheus query, so urllib3's never escape the adapter.

Callers decide by class: ``Unavailable`` (no answer, a 5xx or a 429) is worth repeating
after a backoff; everything else is not (a query Prometheus refused, an answer that is not
one, a certificate we do not trust, a token we cannot read). ``str()`` says why, with the
query's endpoint, so a log line or a Warning Event names the cause.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator


class PrometheusError(Exception):
    """A query gave no usable answer."""


class Unavailable(PrometheusError):
    """No answer (refused, reset, timed out), or 5xx / 429: repeated after a backoff."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Refused(PrometheusError):
    """Prometheus answered 4xx: the query is bad (``bad_data``) or we may not ask
    (401/403). ``error_type`` is the answer's ``errorType`` when it had one."""

    def __init__(self, message: str, *, status: int, error_type: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class BadAnswer(PrometheusError):
    """The answer is not a Prometheus answer: not JSON, too large, the wrong shape, or
    ``status: error``."""


class TLSProblem(PrometheusError):
    """The server's certificate is not trusted (a CA file, an address): configuration,
    not an outage, so it is not retried."""


class TokenUnavailable(PrometheusError):
    """The bearer token cannot be read (its file, its Secret)."""


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error and what it wraps (urllib3 keeps the cause in ``reason``)."""
    seen: set[int] = set()
    pending: list[object] = [error]
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending += [current.__cause__, current.__context__, getattr(current, "reason", None)]
        pending += list(current.args[:1])


def certificate_problem(error: BaseException) -> str | None:
    """Why a certificate was refused, when that is why the connection failed."""
    for cause in _chain(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return str(cause)
    return None
