"""The swap audit as the NodeReport shows it: behaviour, node support, drifted containers."""

from __future__ import annotations

from agent.runtime.status import SwapStatus
from agent.swap.audit import AuditReport


def published(report: AuditReport) -> SwapStatus:
    summary = report.summary
    return SwapStatus(
        behavior=summary.node.behavior,
        cgroup_v2=summary.node.cgroup_v2,
        noswap_supported=summary.noswap_supported,
        drifted=tuple(f"{row.namespace}/{row.pod}/{row.container}" for row in report.drifted),
    )
