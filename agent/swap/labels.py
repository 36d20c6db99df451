"""The Node's swap label, capacity annotation and opt-in taint, as a guarded-patch builder.

- label ``kubelet-companion.io/swap=true|false``: swap is on (``/proc/swaps`` lists a device);
- annotation ``kubelet-companion.io/swap-capacity-bytes``: ``SwapTotal`` in bytes;
- taint ``kubelet-companion.io/swap:NoSchedule`` when ``memorySwap.taintSwapNodes`` is on and
  swap is on, as the swap guide recommends, so only pods that tolerate swap land there. It is
  removed when swap goes off or the option is turned off: the key is ours.

Only these keys are ever touched; everything else on the Node is carried over unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from agent import DOMAIN
from agent.kube.jsontypes import JsonObject
from agent.kube.patches import Op, Taint, metadata_map_ops, taint_ops
from agent.kubesemantics.wellknown import NO_SCHEDULE

SWAP_LABEL = f"{DOMAIN}/swap"
SWAP_CAPACITY_ANNOTATION = f"{DOMAIN}/swap-capacity-bytes"
SWAP_TAINT = Taint(f"{DOMAIN}/swap", effect=NO_SCHEDULE)


def swap_node_ops(node: JsonObject, *, swap_on: bool, capacity_bytes: int, taint: bool) -> list[Op]:
    ops = metadata_map_ops(node, "labels", set_values={SWAP_LABEL: "true" if swap_on else "false"})
    ops += metadata_map_ops(
        node, "annotations", set_values={SWAP_CAPACITY_ANNOTATION: str(capacity_bytes)}
    )
    if taint and swap_on:
        ops += taint_ops(node, ensure=SWAP_TAINT)
    else:
        ops += taint_ops(node, remove=SWAP_TAINT.key)
    return ops


def swap_node_builder(
    *, swap_on: bool, capacity_bytes: int, taint: bool
) -> Callable[[JsonObject], list[Op]]:
    def build(node: JsonObject) -> list[Op]:
        return swap_node_ops(node, swap_on=swap_on, capacity_bytes=capacity_bytes, taint=taint)

    return build
