"""Our own error hierarchy, so the client's exceptions never escape the adapter.

Callers decide on retries by class: ``Conflict`` and ``Invalid`` (a failed ``test`` op) mean
"re-read and recompute"; ``TooManyRequests`` and ``Unavailable`` mean "back off and repeat";
everything else is a real failure.
"""

from __future__ import annotations

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
    """422: validation failed, including a JSON-patch ``test`` op that did not match."""


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
