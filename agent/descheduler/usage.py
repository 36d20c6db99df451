"""The agents' NodeReports as the descheduler's ``NodeUsage``, in the plugins' units.

The reader (``agent.kube.nodereports``) keeps what an agent wrote: CPU in cores, memory in
bytes, pods by uid. The plugins count CPU in millicores, like requests, so real usage and
requests can stand in for each other node by node: a node whose report is stale (older than
three heartbeats) or missing falls back to requests, and the plugins record that fallback.

A report that says the node is shutting down (``inProgress`` or ``completed``), that its
readiness gate is held, or that its agent stopped makes the node no room for evicted pods.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from agent.descheduler.model import CPU, MEMORY, NodeUsage, ResourceList
from agent.kube.nodereports import NodeUsageReport


def _resources(cpu_cores: float, memory_bytes: int) -> ResourceList:
    # Rounded up, like a request's MilliValue(): a pod using 0.0004 cores still uses some.
    return {CPU: math.ceil(cpu_cores * 1000), MEMORY: memory_bytes}


def node_usage(report: NodeUsageReport, now: float) -> NodeUsage:
    """One report, as the plugins read it; ``now`` decides staleness (Unix seconds)."""
    return NodeUsage(
        node=report.node,
        usage=_resources(report.cpu_cores, report.memory_bytes),
        pod_usage={pod.uid: _resources(pod.cpu_cores, pod.memory_bytes) for pod in report.pods},
        stale=report.stale(now),
        shutting_down=report.shutdown != "none",
        gated=report.gate_held,
        agent_stopped=report.agent_stopped,
        shutdown_completed=report.shutdown == "completed",
        boot_id=report.boot_id,
    )


def usage_by_node(reports: Iterable[NodeUsageReport], now: float) -> dict[str, NodeUsage]:
    """Every node's usage by name, stale reports included and flagged."""
    return {report.node: node_usage(report, now) for report in reports}
