"""The node most swap tests audit: cgroup v2, LimitedSwap, swap on, 16 GiB of RAM, 4 GiB of swap."""

from __future__ import annotations

from agent.swap.audit import NodeSummary
from agent.swap.limits import LIMITED_SWAP, SwapNode
from tests.harness.cgroups import GIB

V2_LIMITED_SWAP_NODE = NodeSummary(
    node=SwapNode(LIMITED_SWAP, True, True, 16 * GIB, 4 * GIB),
    swap_on=True,
    swap_used_bytes=0,
    swap_total_bytes=4 * GIB,
    cgroup_mode="v2",
    noswap_supported=True,
    noswap_reason="kernel >= 6.4",
    page_size=4096,
    driver="systemd",
    kubepods_root="kubepods.slice",
)
