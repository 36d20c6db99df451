"""A container's resources after an in-place resize: the status's allocation over the spec."""

from fractions import Fraction
from typing import Any

import pytest

from agent.kubesemantics.podresources import MEMORY, allocated_resources

GIB = 2**30
SPEC = {"requests": {"memory": "2Gi"}, "limits": {"memory": "4Gi"}}


@pytest.mark.parametrize(
    ("status", "memory_request", "memory_limit"),
    [
        pytest.param(None, 2 * GIB, 4 * GIB, id="no-status-uses-the-spec"),
        pytest.param({"name": "app"}, 2 * GIB, 4 * GIB, id="status-without-resources"),
        pytest.param(
            {"allocatedResources": {"memory": "1Gi"}},
            GIB,
            4 * GIB,
            id="allocated-request-wins-over-the-spec",
        ),
        pytest.param(
            {"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "3Gi"}}},
            GIB,
            3 * GIB,
            id="actuated-resources-without-allocated",
        ),
        pytest.param(
            {
                "allocatedResources": {"memory": "1536Mi"},
                "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "3Gi"}},
            },
            1536 * 2**20,
            3 * GIB,
            id="allocated-request-over-actuated-request",
        ),
        pytest.param(
            {"allocatedResources": "junk", "resources": ["junk"]},
            2 * GIB,
            4 * GIB,
            id="malformed-status-falls-back-to-the-spec",
        ),
    ],
)
def test_memory_comes_from_the_status_where_it_has_it(
    status: Any, memory_request: int, memory_limit: int
) -> None:
    """Requests: allocatedResources, else resources.requests; limits: resources.limits."""
    resources = allocated_resources(SPEC, status)
    assert (resources.request(MEMORY), resources.limit(MEMORY)) == (
        Fraction(memory_request),
        Fraction(memory_limit),
    )


def test_a_request_missing_from_the_status_defaults_to_its_limit() -> None:
    """As the API server defaults a missing request to the limit, so does the status path."""
    resources = allocated_resources(
        {"limits": {"memory": "1Gi"}}, {"resources": {"limits": {"memory": "2Gi"}}}
    )
    assert resources.request(MEMORY) == resources.limit(MEMORY) == Fraction(2 * GIB)
