"""HTTP statuses map onto our own error classes, so callers retry by class."""

import ssl

import pytest

from agent.kube.errors import (
    RETRYABLE,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    TooManyRequests,
    Unavailable,
    certificate_problem,
    decode_error,
    error_for_status,
)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequest),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (410, Gone),
        (422, Invalid),
        (429, TooManyRequests),
        (500, Unavailable),
        (503, Unavailable),
        (504, Unavailable),
        (0, Unavailable),
        (418, KubeError),
    ],
)
def test_status_maps_to_class(status: int, cls: type[KubeError]) -> None:
    """Each status gets its class; unknown 5xx are Unavailable."""
    error = error_for_status(status, {"message": "m", "reason": "R"})
    assert type(error) is cls
    assert (error.status, error.reason, str(error)) == (status, "R", "m")


def test_conflict_tells_already_exists_apart() -> None:
    """409 AlreadyExists and 409 Conflict share a class but not a meaning."""
    assert error_for_status(409, {"reason": "AlreadyExists"}).already_exists  # type: ignore[attr-defined]
    assert not error_for_status(409, {"reason": "Conflict"}).already_exists  # type: ignore[attr-defined]


def test_pdb_refusal_is_recognised() -> None:
    """An eviction refused by a PodDisruptionBudget carries the DisruptionBudget cause."""
    error = error_for_status(
        429,
        {
            "message": "Cannot evict pod as it would violate the pod's disruption budget.",
            "details": {"causes": [{"reason": "DisruptionBudget"}]},
        },
        retry_after=2,
    )
    assert isinstance(error, TooManyRequests)
    assert error.disruption_budget
    assert error.retry_after == 2


def test_retryable_errors_are_throttling_and_unavailability() -> None:
    """Only 429 and unavailability are retried unchanged."""
    assert set(RETRYABLE) == {TooManyRequests, Unavailable}


def _status_422(cause: str) -> dict[str, object]:
    # What kube-apiserver's NewGenericServerResponse(422, ...) sends for a JSON patch.
    return {
        "kind": "Status",
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {"causes": [{"message": cause}]},
        "code": 422,
    }


@pytest.mark.parametrize(
    ("cause", "failed_test"),
    [
        pytest.param(
            "testing value /metadata/resourceVersion failed: test failed", True, id="test-failed"
        ),
        pytest.param("Testing value /metadata/resourceVersion failed", True, id="older-servers"),
        pytest.param("testing value /spec/taints failed: test failed", False, id="other-path"),
        pytest.param(
            'remove operation does not apply: doc is missing path: "/metadata/labels/x"',
            False,
            id="op-does-not-apply",
        ),
        pytest.param("", False, id="no-cause"),
    ],
)
def test_a_failed_guard_is_told_apart_from_other_422s(cause: str, failed_test: bool) -> None:
    """Only a failed test op on the given path counts as a stale guard; other 422s do not."""
    error = error_for_status(422, _status_422(cause))
    assert isinstance(error, Invalid)
    assert error.failed_test("/metadata/resourceVersion") is failed_test


@pytest.mark.parametrize(
    ("data", "headers", "message", "retry_after"),
    [
        pytest.param(
            b'{"kind":"Status","message":"slow down","reason":"TooManyRequests"}',
            {"Retry-After": "3"},
            "slow down",
            3.0,
            id="status-with-retry-after",
        ),
        pytest.param(b"<html>bad gateway</html>", {}, "<html>bad gateway</html>", None,
                     id="not-json"),
        pytest.param(b'["a list"]', None, "['a list']", None, id="not-an-object"),
        pytest.param(b"", {"Retry-After": "soon"}, "HTTP 429", None, id="empty-and-bad-header"),
    ],
)  # fmt: skip
def test_an_answer_is_decoded_into_our_error_whatever_its_body(
    data: bytes, headers: dict[str, str] | None, message: str, retry_after: float | None
) -> None:
    """A 429's body and Retry-After become ``TooManyRequests``; a body that is no Status
    still gives a message, and a Retry-After that is no number is none."""
    error = decode_error(429, data, headers)
    assert isinstance(error, TooManyRequests)
    assert str(error) == message
    assert error.retry_after == retry_after


class _MaxRetryError(Exception):
    """Like urllib3's: the cause is kept in ``reason``."""

    def __init__(self, reason: BaseException) -> None:
        super().__init__("max retries exceeded")
        self.reason = reason


def test_a_refused_certificate_is_found_however_deep_it_is_wrapped() -> None:
    """The certificate problem is found through ``reason``, ``args[0]`` and ``__cause__``."""
    refused = ssl.SSLCertVerificationError(1, "certificate verify failed: self-signed")
    inner = OSError("connect failed")
    inner.__cause__ = refused
    assert certificate_problem(_MaxRetryError(RuntimeError(inner))) == str(refused)
    assert certificate_problem(_MaxRetryError(RuntimeError(OSError("refused")))) is None
