"""Our own error hierarchy, so the client's exceptions never escape the adapter.

Callers decide on retries by class: ``Conflict`` and an ``Invalid`` that is a failed ``test``
op (``Invalid.failed_test``) mean "re-read and recompute"; ``TooManyRequests`` and
``Unavailable`` mean "back off and repeat"; everything else is a real failure. A
``KubeConfigError`` (including ``TLSError``) is the operator's to fix. Each error keeps the
cause it was made from (``__cause__``), so logs say why a call failed, not just "HTTP 0".

Decoding lives here too, beside the classes it picks from: an answer's status, ``Status``
body and ``Retry-After`` header become one of them (``decode_error``), and a failure that
got no answer is searched for a refused certificate (``certificate_problem``). Both are
pure (bytes, headers and exceptions in, our error out); what the transport does with them
(logging a TLS problem once, telling a timeout from a refused connection) is
``agent.kube.transport``'s.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any


class KubeError(Exception):
    """An API call failed. ``status`` is the HTTP code (0 when no response arrived)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: str = "",
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.body = body or {}


class NodeOnlyMode(KubeError):
    """No cluster is configured; Kubernetes features are off."""


class KubeConfigError(KubeError):
    """The configured kubeconfig (or in-cluster config) cannot be loaded."""


class TLSError(KubeConfigError):
    """The TLS handshake failed over a certificate: the API server's is not trusted (wrong CA,
    wrong server address) or ours was refused.

    A configuration problem, not an outage: repeating the request unchanged will not help,
    so it is not in ``RETRYABLE``, and it is logged as an error rather than as a retry.
    """


class BadRequest(KubeError):
    """400: the request itself is malformed (a bug on our side, not retried)."""


class Unauthorized(KubeError):
    """401: credentials were rejected."""


class Forbidden(KubeError):
    """403: RBAC does not allow this."""


class NotFound(KubeError):
    """404: the object (or the resource type) does not exist."""


class Conflict(KubeError):
    """409: a stale resourceVersion, or the object already exists (``reason`` tells)."""

    @property
    def already_exists(self) -> bool:
        return self.reason == "AlreadyExists"


class Gone(KubeError):
    """410: the resourceVersion is too old; a watch must relist."""


class Invalid(KubeError):
    """422: validation failed, or a JSON-patch operation did not apply.

    The API server answers every JSON patch that fails to apply with the same generic 422
    (``NewGenericServerResponse``: "the server rejected our request due to an error in our
    request"); what failed is only in ``details.causes[].message``, the json-patch library's
    error text. A ``test`` op that did not match reads "testing value <path> failed: test
    failed" (capitalised by older servers).
    """

    @property
    def causes(self) -> list[object]:
        """``details.causes`` as the server sent them (empty when it gave none)."""
        causes = (self.body.get("details") or {}).get("causes") or []
        return list(causes) if isinstance(causes, list) else []

    def failed_test(self, path: str) -> bool:
        """Whether this is a ``test`` op on ``path`` (a JSON pointer) that did not match, as
        far as the answer says: a server that sends no causes (v1.28) never says so."""
        causes = self.causes
        wanted = f"testing value {path} failed".lower()
        return any(
            isinstance(cause, dict) and str(cause.get("message", "")).lower().startswith(wanted)
            for cause in causes
        )


class TooManyRequests(KubeError):
    """429: throttled, or an eviction that a PodDisruptionBudget forbids."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after

    @property
    def disruption_budget(self) -> bool:
        causes = (self.body.get("details") or {}).get("causes") or []
        return any(cause.get("reason") == "DisruptionBudget" for cause in causes) or (
            "disruption budget" in str(self).lower()
        )


class Unavailable(KubeError):
    """5xx, a refused or dropped connection: the API server is not answering properly."""


class Timeout(Unavailable):
    """The request did not complete within its client-side timeout."""


class LeadershipLost(KubeError):
    """We do not (or no longer) hold the leader Lease; a leader-only action must not run."""


_BY_STATUS: dict[int, type[KubeError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_for_status(
    status: int, body: dict[str, Any], retry_after: float | None = None
) -> KubeError:
    """Map an HTTP status and its ``Status`` body to our class."""
    message = str(body.get("message") or f"HTTP {status}")
    reason = str(body.get("reason") or "")
    if status == 429:
        return TooManyRequests(
            message, retry_after=retry_after, status=status, reason=reason, body=body
        )
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = Unavailable if status >= 500 or status == 0 else KubeError
    return cls(message, status=status, reason=reason, body=body)


RETRYABLE = (TooManyRequests, Unavailable)
"""Errors worth repeating unchanged after a backoff."""


# -- decoding ---------------------------------------------------------------------------

_CERTIFICATE_REASONS = ("CERTIFICATE", "UNKNOWN_CA", "UNSUPPORTED_CERT")
"""OpenSSL reasons (alerts from the server included) that mean a certificate was refused."""


def decode_error(status: int, data: bytes | None, headers: Any) -> KubeError:
    """Our error for a non-2xx answer: its status, its body (a ``Status``, or whatever text
    came instead) and its ``Retry-After`` header."""
    try:
        body = json.loads(data) if data else {}
    except ValueError:
        body = {"message": (data or b"").decode("utf-8", "replace")[:500]}
    if not isinstance(body, dict):
        body = {"message": str(body)}
    return error_for_status(status, body, retry_after(headers))


def retry_after(headers: Any) -> float | None:
    """The ``Retry-After`` header in seconds (``None`` when absent or not a number)."""
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def causes(error: BaseException) -> Iterator[BaseException]:
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
    for cause in causes(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return str(cause)
        if isinstance(cause, ssl.SSLError) and any(
            word in str(getattr(cause, "reason", None) or "") for word in _CERTIFICATE_REASONS
        ):
            return str(cause)
    if "CERTIFICATE_VERIFY_FAILED" in str(error):  # only the text survived
        return str(error).replace("\n", " ")
    return None
