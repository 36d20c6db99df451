"""The node half of the audit: adapter facts turned into the calculator's inputs, and the
warnings an operator should see next to the numbers (pure; no I/O here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.config.swap import LIMITED_SWAP, MemorySwapConfig
from agent.node.cgroups import LIMITED_SWAP_NEEDS_V2, CgroupFacts
from agent.node.containercgroups import KubepodsScan
from agent.node.memory import MemoryFacts
from agent.node.tmpfs import NoswapSupport
from agent.swap.audit import AuditReport, NodeSummary
from agent.swap.limits import SwapNode

NOSWAP_EVENT_REASON = "PossibleMemoryBackedVolumesOnDisk"
NOSWAP_EVENT_MESSAGE = (
    "The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, "
    "emptyDirs, etc.) might be swapped to disk and should no longer be considered secure."
)


def kubelet_swap_capacity(node: Mapping[str, Any] | None) -> int | None:
    """``node.status.nodeInfo.swap.capacity``: the swap kubelet saw when it started."""
    swap = (((node or {}).get("status") or {}).get("nodeInfo") or {}).get("swap") or {}
    capacity = swap.get("capacity")
    return capacity if isinstance(capacity, int) and not isinstance(capacity, bool) else None


def node_summary(
    config: MemorySwapConfig,
    *,
    memory: MemoryFacts,
    cgroups: CgroupFacts,
    noswap: NoswapSupport,
    scan: KubepodsScan,
    page_size: int,
    kubelet_capacity: int | None = None,
) -> NodeSummary:
    """The calculator's node: kubelet's swap capacity when the Node reports it (kubelet
    computes limits from what it read at start-up), else ``SwapTotal``."""
    capacity = memory.swap_total_bytes if kubelet_capacity is None else kubelet_capacity
    node = SwapNode(
        behavior=config.swap_behavior,
        cgroup_v2=cgroups.v2,
        swap_controller=cgroups.swap_controller,
        memory_total_bytes=memory.memory_total_bytes,
        swap_capacity_bytes=capacity,
        reserved_swap_bytes=config.reserved_swap,
    )
    return NodeSummary(
        node=node,
        swap_on=memory.swap_on,
        swap_used_bytes=memory.swap_used_bytes,
        swap_total_bytes=memory.swap_total_bytes,
        cgroup_mode=cgroups.mode.value,
        noswap_supported=noswap.supported,
        noswap_reason=noswap.reason,
        page_size=page_size,
        driver=scan.driver.value if scan.driver else None,
        kubepods_root=scan.root,
        kubepods_problem=scan.problem,
        kubelet_swap_capacity_bytes=kubelet_capacity,
        kubepods_version=scan.version,
        swap_controller_detail=cgroups.swap_controller_line(),
    )


def noswap_warning_due(summary: NodeSummary) -> bool:
    """kubelet's rule for ``PossibleMemoryBackedVolumesOnDisk``: swap on, noswap missing."""
    return summary.swap_on and not summary.noswap_supported


def cgroup_v1_warning(summary: NodeSummary) -> str:
    """What the audit does and does not do on a cgroup v1 node, said plainly."""
    tree = (
        f" (kubepods tree {summary.kubepods_root}, cgroup v1)"
        if summary.kubepods_version == 1
        else ""
    )
    asked = (
        " (memorySwap.swapBehavior is LimitedSwap: the kubelet cannot apply it here)"
        if summary.node.behavior == LIMITED_SWAP
        else ""
    )
    return (
        f"{LIMITED_SWAP_NEEDS_V2}: this node's cgroups are {summary.cgroup_mode}{tree}, where "
        f"the kubelet sets no memory.swap.max{asked}, so no swap limit is compared or "
        "enforced. Listed per container: working set and swap in use "
        "(memory.memsw.usage_in_bytes - memory.usage_in_bytes). Not compared: "
        "memory.memsw.limit_in_bytes, which caps memory+swap together (the kubelet sets it "
        "to the memory limit) and is not the kubelet's swap limit"
    )


def node_warnings(summary: NodeSummary) -> list[str]:
    """Problems with the node itself; each stays true until the node changes."""
    node = summary.node
    warnings = []
    if noswap_warning_due(summary):
        warnings.append(f"{NOSWAP_EVENT_REASON}: {NOSWAP_EVENT_MESSAGE}")
    if summary.cgroup_v1:
        warnings.append(cgroup_v1_warning(summary))
    elif node.behavior == LIMITED_SWAP and not (node.cgroup_v2 and node.swap_controller):
        warnings.append(
            "swapBehavior is LimitedSwap but cgroup v2 with the swap controller is missing: "
            "every container gets no swap"
        )
    if summary.capacity_mismatch:
        warnings.append(
            f"kubelet reports {summary.kubelet_swap_capacity_bytes} bytes of swap but the node "
            f"has {summary.swap_total_bytes} (SwapTotal): kubelet reads swap at start-up, so "
            "containers get limits from its size until kubelet restarts; expected limits use "
            "kubelet's size and memorySwap.enforce writes nothing until the two agree"
        )
    return warnings


def report_warnings(report: AuditReport) -> list[str]:
    """Everything ``swap report`` should flag: the node's problems, then the containers'."""
    summary = report.summary
    warnings = node_warnings(summary)
    if summary.driver is None and report.containers:
        warnings.append(f"no kubepods cgroup tree found: {summary.kubepods_problem}")
    if report.drifted:
        warnings.append(
            f"{len(report.drifted)} container(s) have a memory.swap.max other than expected"
        )
    warnings.extend(
        f"{row.namespace}/{row.pod} {row.container}: {row.expected.error}"
        for row in report.containers
        if row.expected.error
    )
    return warnings
