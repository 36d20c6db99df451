"""kubelet's LimitedSwap calculator, rule by rule, with kubelet's float64 arithmetic."""

from dataclasses import replace
from typing import Any

import pytest

from agent.swap.limits import (
    LIMITED_SWAP,
    SwapCalculationError,
    SwapNode,
    calc_swap_for_burstable_pods,
    container_swap_limit,
)
from agent.swap.pods import pod_view
from tests.harness.cgroups import GIB, ContainerFixture, pod_object

NODE = SwapNode(
    behavior=LIMITED_SWAP,
    cgroup_v2=True,
    swap_controller=True,
    memory_total_bytes=16 * GIB,
    swap_capacity_bytes=4 * GIB,
)
BURSTABLE = {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}


def limit_for(
    node: SwapNode = NODE,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    *,
    others: tuple[ContainerFixture, ...] = (),
    **pod: Any,
) -> tuple[int, str, str | None]:
    """The (bytes, reason, error) kubelet's rules give the pod's first container."""
    main = ContainerFixture("main", "a" * 64, requests or {}, limits or {})
    view = pod_view(pod_object("p", "uid-1", main, *others, **pod))
    result = container_swap_limit(node, view, view.containers[0])
    return result.bytes, result.reason, result.error


def test_one_gib_request_on_16_gib_node_with_4_gib_swap_is_kubelets_268435456() -> None:
    """The issue's reference case: 1Gi / 16Gi * 4Gi = 268435456, as kubelet computes it."""
    assert limit_for(**BURSTABLE) == (268435456, LIMITED_SWAP, None)


def test_float64_truncation_is_kubelets_not_exact_arithmetic() -> None:
    """1/49 * 49 is 0.999… in float64: kubelet gets 1073741823, one byte less than the
    1073741824 exact arithmetic gives, and so must we."""
    node = replace(NODE, memory_total_bytes=49 * GIB, swap_capacity_bytes=49 * GIB)
    assert limit_for(node, **BURSTABLE)[0] == 1073741823


@pytest.mark.parametrize(
    ("node", "requests", "limits", "pod", "expected", "reason"),
    [
        pytest.param(
            replace(NODE, behavior="NoSwap"),
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {},
            0,
            "swapBehavior is NoSwap",
            id="behavior-NoSwap",
        ),
        pytest.param(
            replace(NODE, cgroup_v2=False),
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {},
            0,
            "no cgroup v2",
            id="no-cgroup-v2",
        ),
        pytest.param(
            replace(NODE, swap_controller=False),
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {},
            0,
            "no swap controller",
            id="no-swap-controller",
        ),
        pytest.param(
            NODE,
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {"annotations": {"kubernetes.io/config.source": "file"}},
            0,
            "critical pod (static pod)",
            id="static-pod",
        ),
        pytest.param(
            NODE,
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {
                "annotations": {
                    "kubernetes.io/config.mirror": "abc",
                    "kubernetes.io/config.source": "file",
                }
            },
            0,
            "critical pod (mirror pod)",
            id="mirror-pod",
        ),
        pytest.param(
            NODE,
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {"priority": 2000000000},
            0,
            "critical pod (priority 2000000000 >= 2000000000)",
            id="priority-at-critical-boundary",
        ),
        pytest.param(
            NODE,
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {"priority": 1999999999},
            268435456,
            LIMITED_SWAP,
            id="priority-just-below-critical",
        ),
        pytest.param(
            NODE,
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {"annotations": {"kubernetes.io/config.source": "api"}},
            268435456,
            LIMITED_SWAP,
            id="api-source-is-not-static",
        ),
        pytest.param(
            NODE,
            {"memory": "1Gi", "cpu": "1"},
            {"memory": "1Gi", "cpu": "1"},
            {},
            0,
            "QoS is Guaranteed",
            id="guaranteed",
        ),
        pytest.param(NODE, None, None, {}, 0, "QoS is BestEffort", id="besteffort"),
        pytest.param(
            NODE,
            {"memory": "1Gi", "cpu": "500m"},
            {"memory": "1Gi", "cpu": "1"},
            {},
            0,
            "memory request equals limit",
            id="request-equals-limit-burstable",
        ),
        pytest.param(
            NODE,
            {"memory": "1024Mi", "cpu": "500m"},
            {"memory": "1Gi"},
            {},
            0,
            "memory request equals limit",
            id="equal-in-different-units",
        ),
        pytest.param(
            NODE,
            None,
            {"memory": "2Gi"},
            {},
            0,
            "memory request equals limit",
            id="limit-only-defaults-request-to-limit",
        ),
        pytest.param(
            NODE, {"memory": "1Gi"}, None, {}, 268435456, LIMITED_SWAP, id="request-without-limit"
        ),
        pytest.param(
            NODE,
            {"memory": "1"},
            {"memory": "2"},
            {},
            0,
            LIMITED_SWAP,
            id="tiny-request-rounds-down-to-zero",
        ),
        pytest.param(
            NODE,
            {"memory": "16Gi"},
            {"memory": "32Gi"},
            {},
            4 * GIB,
            LIMITED_SWAP,
            id="request-equal-to-node-memory",
        ),
        pytest.param(
            replace(NODE, reserved_swap_bytes=1 * GIB),
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {},
            201326592,
            LIMITED_SWAP,
            id="reserved-swap",
        ),
        pytest.param(
            replace(NODE, reserved_swap_bytes=8 * GIB),
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {},
            0,
            LIMITED_SWAP,
            id="reserved-above-capacity",
        ),
        pytest.param(
            replace(NODE, swap_capacity_bytes=0),
            {"memory": "1Gi"},
            {"memory": "2Gi"},
            {},
            0,
            LIMITED_SWAP,
            id="swap-off",
        ),
    ],
)
def test_each_rule(  # noqa: PLR0917 - one parameter per column of the rule table
    node: SwapNode,
    requests: dict[str, str] | None,
    limits: dict[str, str] | None,
    pod: dict[str, Any],
    expected: int,
    reason: str,
) -> None:
    """Each of kubelet's no-swap rules, and the formula where none applies."""
    assert limit_for(node, requests, limits, **pod)[:2] == (expected, reason)


def test_container_without_memory_in_a_burstable_pod_gets_no_swap() -> None:
    """Burstable by its sibling's request, a container with no memory settings gets 0."""
    sibling = ContainerFixture("sidecar", "b" * 64, {"memory": "1Gi"})
    assert limit_for(NODE, {"cpu": "100m"}, None, others=(sibling,))[:2] == (
        0,
        "no memory request or limit",
    )


def test_request_larger_than_node_memory_falls_back_to_no_swap_with_kubelets_error() -> None:
    """Request > MemTotal: kubelet logs the error and disallows swap."""
    node = replace(NODE, memory_total_bytes=16 * GIB)
    assert limit_for(node, {"memory": f"{16 * GIB + 1}"}, {"memory": "32Gi"}) == (
        0,
        "calculation error",
        f"container request {16 * GIB + 1} is larger than total node memory {16 * GIB}",
    )


def test_zero_node_memory_falls_back_to_no_swap_with_kubelets_error() -> None:
    """MemTotal of 0 (unreadable meminfo) is kubelet's "total node memory is 0"."""
    node = replace(NODE, memory_total_bytes=0)
    assert limit_for(node, **BURSTABLE) == (0, "calculation error", "total node memory is 0")


@pytest.mark.parametrize(
    ("requested", "total", "swap", "expected"),
    [
        pytest.param(GIB, 16 * GIB, 4 * GIB, 268435456, id="reference-case"),
        pytest.param(0, 16 * GIB, 4 * GIB, 0, id="no-request"),
        pytest.param(16 * GIB, 16 * GIB, 4 * GIB, 4 * GIB, id="request-is-all-memory"),
        # 3/7 of 5 GiB: 2300875337.14…, truncated (kubelet's value, worked out by hand).
        pytest.param(3 * GIB, 7 * GIB, 5 * GIB, 2300875337, id="fraction-truncated"),
        # 1/3 of 1 GiB in float64 is 357913941.33…, which truncates to 357913941.
        pytest.param(GIB, 3 * GIB, GIB, 357913941, id="one-third"),
    ],
)
def test_formula(requested: int, total: int, swap: int, expected: int) -> None:
    """calcSwapForBurstablePods: proportion of memory times swap, truncated."""
    assert calc_swap_for_burstable_pods(requested, total, swap) == expected


def test_formula_errors_carry_kubelets_messages() -> None:
    """The two error texts are kubelet's, word for word."""
    with pytest.raises(SwapCalculationError, match=r"^total node memory is 0$"):
        calc_swap_for_burstable_pods(1, 0, 1)
    with pytest.raises(SwapCalculationError, match=r"^container request 3 is larger than total"):
        calc_swap_for_burstable_pods(3, 2, 1)
