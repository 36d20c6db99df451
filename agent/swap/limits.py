"""kubelet's LimitedSwap calculator: the ``memory.swap.max`` each container should have.

The rules are kubelet's (``GetContainerSwapBehavior`` and ``calcSwapForBurstablePods``):
a container gets no swap (``0``) unless the behavior is LimitedSwap on cgroup v2 with the
swap controller, the pod is neither critical nor anything but Burstable, and the container
asks for memory with a request different from its limit. Then its share is

    int64(float64(request) / float64(nodeMemCapacity) * float64(podsSwapAvailable))

computed in float64 and truncated, exactly as Go does, so our number is kubelet's to the
byte. ``podsSwapAvailable`` is the swap capacity minus ``memorySwap.reservedSwap``; with
the default of 0 it is kubelet's full-capacity arithmetic. The capacity is the one kubelet
read at start-up (``status.nodeInfo.swap.capacity``), chosen in ``summary.node_summary``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.config.swap import LIMITED_SWAP
from agent.kubesemantics.qos import QOSClass
from agent.swap.pods import ContainerView, PodView

KUBELET_CALC_ERROR = "cannot calculate swap allocation amount; disallowing swap"


@dataclass(frozen=True)
class SwapNode:
    """What the calculator needs to know about the node."""

    behavior: str
    cgroup_v2: bool
    swap_controller: bool
    memory_total_bytes: int
    swap_capacity_bytes: int
    reserved_swap_bytes: int = 0

    @property
    def pods_swap_available(self) -> int:
        return max(0, self.swap_capacity_bytes - self.reserved_swap_bytes)


@dataclass(frozen=True)
class SwapLimit:
    """The expected ``memory.swap.max`` in bytes, and the rule that decided it."""

    bytes: int
    reason: str
    error: str | None = None
    """kubelet's calculation error when the formula could not be applied."""


class SwapCalculationError(ValueError):
    """The formula does not apply; kubelet logs this and gives the container no swap."""


def calc_swap_for_burstable_pods(
    container_memory_request: int, node_total_memory: int, total_pods_swap_available: int
) -> int:
    if node_total_memory <= 0:
        raise SwapCalculationError("total node memory is 0")
    if container_memory_request > node_total_memory:
        raise SwapCalculationError(
            f"container request {container_memory_request} is larger than total node memory "
            f"{node_total_memory}"
        )
    proportion = float(container_memory_request) / float(node_total_memory)
    # int() truncates toward zero, like Go's int64(float64) conversion.
    return int(proportion * float(total_pods_swap_available))


def no_swap_reason(node: SwapNode, pod: PodView, container: ContainerView) -> str | None:
    """Why the container gets no swap, or ``None`` when the LimitedSwap formula applies.

    The rules are checked in kubelet's order, so the reason given is the one kubelet hit.
    """
    rules = (
        (node.behavior != LIMITED_SWAP, f"swapBehavior is {node.behavior}"),
        (not node.cgroup_v2, "no cgroup v2"),
        (not node.swap_controller, "no swap controller"),
        (pod.critical is not None, f"critical pod ({pod.critical})"),
        (pod.qos is not QOSClass.BURSTABLE, f"QoS is {pod.qos.value}"),
        (
            container.memory_request == 0 and container.memory_limit == 0,
            "no memory request or limit",
        ),
        (container.request_equals_limit, "memory request equals limit"),
    )
    return next((reason for applies, reason in rules if applies), None)


def container_swap_limit(node: SwapNode, pod: PodView, container: ContainerView) -> SwapLimit:
    reason = no_swap_reason(node, pod, container)
    if reason is not None:
        return SwapLimit(0, reason)
    try:
        share = calc_swap_for_burstable_pods(
            container.memory_request, node.memory_total_bytes, node.pods_swap_available
        )
    except SwapCalculationError as error:
        return SwapLimit(0, "calculation error", error=str(error))
    return SwapLimit(share, LIMITED_SWAP)
