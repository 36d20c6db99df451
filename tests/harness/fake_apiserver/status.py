"""API errors and the `Status` bodies the real API server sends for them.

Clients (the official Python client, kubectl, client-go) branch on `code` and `reason`, and
humans read `message`, so every failure here is built the way apimachinery's
`k8s.io/apimachinery/pkg/api/errors` builds it: same reason strings, same message shapes, same
`details` keys.
"""

from __future__ import annotations

from typing import Any

from .resources import ResourceType

JSON = dict[str, Any]

_REASON_BY_CODE: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

_DEFAULT_MESSAGE_BY_CODE: dict[int, str] = {
    400: "the server rejected our request for an unknown reason",
    401: "Unauthorized",
    403: "forbidden",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    410: "the resource has expired",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
    "processing the request",
}


def reason_for_code(code: int) -> str:
    """The `reason` apimachinery attaches to a bare HTTP code (`""` when it has none)."""
    return _REASON_BY_CODE.get(code, "")


def default_message_for_code(code: int) -> str:
    """The message `NewGenericServerResponse` uses for a bare HTTP code."""
    return _DEFAULT_MESSAGE_BY_CODE.get(
        code,
        f"the server responded with the status code {code} but did not return more information",
    )


class ApiError(Exception):
    """A failure that the HTTP layer renders as a `Status` object with the given code."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: JSON | None = None,
        *,
        retry_after: int | None = None,
        list_continue: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after
        self.list_continue = list_continue

    def to_status(self) -> JSON:
        """The `Status` body, as the real server serialises it."""
        status: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.list_continue:
            status["metadata"] = {"continue": self.list_continue}
        if self.reason:
            status["reason"] = self.reason
        if self.details is not None:
            status["details"] = self.details
        status["code"] = self.code
        return status


def success_status(code: int = 200, details: JSON | None = None) -> JSON:
    """A `Status` with `status: Success`, as returned by deletes and evictions."""
    status: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def _resource_details(rt: ResourceType, name: str) -> JSON:
    details: JSON = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    """`pods "x" not found`."""
    return ApiError(
        404, "NotFound", f'{rt.qualified} "{name}" not found', _resource_details(rt, name)
    )


def path_not_found() -> ApiError:
    """What the server answers for a URL that no route serves."""
    return ApiError(404, "NotFound", default_message_for_code(404), {})


def already_exists(rt: ResourceType, name: str) -> ApiError:
    """`pods "x" already exists`."""
    return ApiError(
        409, "AlreadyExists", f'{rt.qualified} "{name}" already exists', _resource_details(rt, name)
    )


def conflict(rt: ResourceType, name: str, why: str) -> ApiError:
    """`Operation cannot be fulfilled on pods "x": <why>`."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}',
        _resource_details(rt, name),
    )


STALE_OBJECT_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale_conflict(rt: ResourceType, name: str) -> ApiError:
    """The optimistic-concurrency conflict of an update carrying an old resourceVersion."""
    return conflict(rt, name, STALE_OBJECT_MESSAGE)


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """`Pod "x" is invalid: <field>: <detail>`; causes are (reason, field, message) triples."""
    rendered = ", ".join(f"{field}: {message}" for _, field, message in causes)
    details: JSON = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.kind
    details["causes"] = [
        {"reason": reason, "message": message, "field": field} for reason, field, message in causes
    ]
    return ApiError(422, "Invalid", f'{rt.kind} "{name}" is invalid: {rendered}', details)


def unprocessable(detail: str) -> ApiError:
    """What a JSON patch that fails to apply (a failed `test` op among them) is answered with.

    The real server (v1.28) uses `NewGenericServerResponse(422, ..., isUnexpectedResponse=
    false)`: a fixed message, reason Invalid and *no* causes, so the json-patch library's
    text (``detail``, e.g. "testing value /x failed: test failed") never reaches the client,
    which cannot tell a failed `test` op from another failure by the answer alone.
    """
    return ApiError(422, "Invalid", default_message_for_code(422), {})


def bad_request(message: str) -> ApiError:
    """A 400 whose message is the raw error, as `errors.NewBadRequest` builds it."""
    return ApiError(400, "BadRequest", message)


def method_not_allowed() -> ApiError:
    """A verb that the addressed path does not serve."""
    return ApiError(405, "MethodNotAllowed", default_message_for_code(405), {})


def forbidden(rt: ResourceType, name: str, why: str) -> ApiError:
    """`pods "x" is forbidden: <why>`."""
    return ApiError(
        403,
        "Forbidden",
        f'{rt.qualified} "{name}" is forbidden: {why}',
        _resource_details(rt, name),
    )


def too_many_requests(message: str, causes: list[JSON], retry_after: int = 0) -> ApiError:
    """A 429 as `errors.NewTooManyRequests` builds it."""
    details: JSON = {"causes": causes}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return ApiError(429, "TooManyRequests", message, details, retry_after=retry_after or None)


def internal_error(why: str) -> ApiError:
    """A 500 as `errors.NewInternalError` builds it."""
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {why}",
        {"causes": [{"message": why}]},
    )


def expired(message: str, list_continue: str | None = None) -> ApiError:
    """A 410 `Expired` (too old resource version or continue token)."""
    return ApiError(410, "Expired", message, list_continue=list_continue)


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    """A PATCH whose content type the resource does not accept."""
    message = (
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}"
    )
    if not content_type:
        message = f"the server does not support this media type: {accepted}"
    return ApiError(415, "UnsupportedMediaType", message, {})


def injected(
    code: int, message: str | None, reason: str | None, retry_after: int | None
) -> ApiError:
    """A failure produced by fault injection, shaped like the server's own for that code."""
    details: JSON = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return ApiError(
        code,
        reason if reason is not None else reason_for_code(code),
        message or default_message_for_code(code),
        details,
        retry_after=retry_after,
    )
