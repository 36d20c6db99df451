"""``swap report`` output: a table per pod and container, the node summary, then warnings.

Swap limits are printed in exact bytes (they are what the cgroup files hold, and drift can
be a single page); requests and limits also in binary units for reading. On a cgroup v1
kubepods tree no limit is compared, so the table shows what v1 has instead: each container's
working set and swap in use.
"""

from __future__ import annotations

import json

from agent.columns import aligned
from agent.kubesemantics.quantities import format_bytes
from agent.node.cgroups import LIMITED_SWAP_NEEDS_V2
from agent.node.containercgroups import SwapMax
from agent.swap.audit import (
    AuditReport,
    CapacitySource,
    ContainerAudit,
    DriftState,
    NodeSummary,
    UnmappedCgroup,
)
from agent.terminaltext import render_lines

_SOURCES = {
    CapacitySource.KUBELET: "kubelet (status.nodeInfo.swap.capacity)",
    CapacitySource.MEMINFO: "SwapTotal (the Node reports no swap capacity)",
}
_HEADERS = ("CONTAINER", "KIND", "QOS", "REQUEST", "LIMIT", "EXPECTED", "ACTUAL", "USAGE", "DRIFT")
_V1_HEADERS = ("CONTAINER", "KIND", "QOS", "REQUEST", "LIMIT", "WORKING SET", "SWAP USED")
"""A cgroup v1 tree: no swap limit to compare, the values v1 has instead."""


def _memory(value: int) -> str:
    return format_bytes(value) if value else "-"


def _bytes(value: int) -> str:
    return f"{value} ({format_bytes(value)})"


def _swap(value: SwapMax) -> str:
    return "-" if value is None else str(value)


def _drift(row: ContainerAudit) -> str:
    if row.state is DriftState.DRIFT:
        return "DRIFT"
    return {
        DriftState.OK: "ok",
        DriftState.UNKNOWN: "unknown",
        DriftState.NO_CGROUP: "-",
        DriftState.NOT_COMPARED: "-",
    }[row.state]


def _cells(row: ContainerAudit, compared: bool) -> tuple[str, ...]:
    first = (
        row.container,
        row.kind.value,
        row.qos.value,
        _memory(row.memory_request),
        _memory(row.memory_limit),
    )
    if not compared:
        used = (row.memory_working_set, row.usage)
        return (*first, *("-" if value is None else format_bytes(value) for value in used))
    rest = (str(row.expected.bytes), _swap(row.actual), _swap(row.usage), _drift(row))
    return (*first, *rest)


def _unmapped_values(cgroup: UnmappedCgroup, compared: bool) -> str:
    if compared:
        return f"actual={_swap(cgroup.swap_max)}"
    used = (cgroup.memory_working_set, cgroup.swap_current)
    working_set, swap = ("-" if value is None else format_bytes(value) for value in used)
    return f"working set={working_set}  swap used={swap}"


def _kubepods(summary: NodeSummary) -> str:
    if not summary.driver:
        return "none"
    return f"{summary.kubepods_root} ({summary.driver}, cgroup v{summary.kubepods_version})"


def render_table(report: AuditReport, warnings: list[str]) -> str:
    lines: list[str] = []
    pods: dict[tuple[str, str], list[ContainerAudit]] = {}
    for row in report.containers:
        pods.setdefault((row.namespace, row.pod), []).append(row)
    if not pods:
        lines.append("no pods on this node (or node-only mode)")
    compared = report.summary.limits_compared
    for (namespace, pod), rows in pods.items():
        first = rows[0]
        lines.append(f"pod {namespace}/{pod}  qos={first.qos.value}  uid={first.pod_uid}")
        table: list[tuple[str, ...]] = [_HEADERS if compared else _V1_HEADERS]
        table += [_cells(row, compared) for row in rows]
        lines += ["  " + line for line in aligned(table)]
        if compared:
            reasons = sorted({f"{row.container}: {row.expected.reason}" for row in rows})
            lines += [f"    expected because {reason}" for reason in reasons]
        lines.append("")
    if report.unmapped:
        lines.append(f"container cgroups no pod claims: {len(report.unmapped)}")
        lines += [
            f"  {cgroup.path}  {_unmapped_values(cgroup, compared)}" for cgroup in report.unmapped
        ]
        lines.append("")
    summary = report.summary
    node = summary.node
    lines.append("[node]")
    facts = [
        ("swap behavior", node.behavior),
        ("swap on", "yes" if summary.swap_on else "no"),
        (
            "swap capacity",
            f"{_bytes(node.swap_capacity_bytes)} from {_SOURCES[summary.capacity_source]}",
        ),
        ("SwapTotal", _bytes(summary.swap_total_bytes)),
        (
            "kubelet swap capacity",
            "not reported"
            if summary.kubelet_swap_capacity_bytes is None
            else _bytes(summary.kubelet_swap_capacity_bytes),
        ),
        (
            "enforcement",
            f"refused: {summary.enforce_refusal}" if summary.enforce_refusal else "allowed",
        ),
        ("swap used", f"{summary.swap_used_bytes} ({format_bytes(summary.swap_used_bytes)})"),
        ("reserved swap", str(node.reserved_swap_bytes)),
        ("podsSwapAvailable", str(node.pods_swap_available)),
        ("memory total", f"{node.memory_total_bytes} ({format_bytes(node.memory_total_bytes)})"),
        ("cgroup mode", summary.cgroup_mode),
        ("swap controller", summary.swap_controller_detail),
        (
            "tmpfs noswap",
            f"{'yes' if summary.noswap_supported else 'no'} ({summary.noswap_reason})",
        ),
        ("kubepods cgroup", _kubepods(summary)),
        ("swap limits", "compared" if compared else f"not compared ({LIMITED_SWAP_NEEDS_V2})"),
        ("drifted containers", str(len(report.drifted))),
    ]
    width = max(len(key) for key, _ in facts) + 2
    lines += [f"  {key:<{width}}{value}" for key, value in facts]
    lines.append("")
    lines.append("[warnings]")
    lines += [f"  ! {warning}" for warning in warnings] or ["  none"]
    return render_lines(lines)


def render_json(report: AuditReport, warnings: list[str]) -> str:
    return json.dumps({**report.as_json(), "warnings": warnings}, indent=2) + "\n"
