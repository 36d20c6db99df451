"""The agents' NodeReports as the descheduler's ``NodeUsage``: what is believed, and why not.

A NodeReport is written by one node's agent. Admission keeps each agent to its own report
(the ValidatingAdmissionPolicy in ``daemonset/base``), and the descheduler still believes
only what it can check, as kubelet's NodeRestriction would want of any reader:

- **owned**: a Node of the report's name exists, and the report is owned by that Node's
  *current* uid (a report left by an earlier Node of the same name, or claimed for another
  node, is not this node's word);
- **well-formed**: every number finite and non-negative, every timestamp parseable, the
  heartbeat within ``nodereports.HEARTBEAT_RANGE`` (``NodeUsageReport.problems`` names what
  was not);
- **plausible**: the node's usage, each pod's, and their sum at most
  ``PLAUSIBLE_USAGE_MULTIPLE`` times what the Node (not the report) says is allocatable: a
  node cannot use more than its capacity, and allocatable is a large part of it;
- **not from the future**: an ``observedTime`` more than ``CLOCK_SKEW_SECONDS`` ahead of the
  descheduler's clock is a lie or a broken clock.

A report that fails any of these is left out (the node falls back to requests), counted by
``reason`` and logged once (the runtime's ``ReportTrust``).

**Staleness is judged by the descheduler's clock.** ``changed_at`` is when the descheduler
last saw the report change, as wall-clock seconds on its own clock (the live cache records
it on the monotonic clock); the writer's ``observedTime`` can only make a report *older*
(the earlier of the two is taken), never younger. A report unchanged for
``STALE_HEARTBEATS`` heartbeats is stale: its node falls back to requests, and a stale
report vetoes nothing (its "shutting down", "gated" or "stopped" no longer keeps the node
from being room: an uninstalled agent's last word must not hold a node forever).

Units: the plugins count CPU in millicores, like requests, so real usage and requests can
stand in for each other node by node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from agent.descheduler.model.cluster import CLOCK_SKEW_SECONDS, CPU, MEMORY, NodeInfo, NodeUsage
from agent.descheduler.model.values import ResourceList
from agent.kube.nodereports import NodeUsageReport

PLAUSIBLE_USAGE_MULTIPLE = 2.0
"""Usage may be at most this many times the Node's allocatable (cpu and memory)."""

NO_NODE = "no-node"
NOT_OWNED = "not-owned"
INVALID = "invalid"
IMPLAUSIBLE = "implausible"
FUTURE = "future-timestamp"
REASONS = (NO_NODE, NOT_OWNED, INVALID, IMPLAUSIBLE, FUTURE)
"""Why a report is not believed: the ``reason`` label of the distrust metric."""


@dataclass(frozen=True)
class Distrusted:
    """A report the descheduler does not believe."""

    report: str
    reason: str
    """One of ``REASONS``."""
    detail: str


@dataclass(frozen=True)
class Verdicts:
    """Every report judged: the believed ones as ``NodeUsage`` by node, the rest by name."""

    usage: dict[str, NodeUsage] = field(default_factory=dict)
    distrusted: dict[str, Distrusted] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Distrusted reports by reason (every reason present, 0 where none)."""
        counts = dict.fromkeys(REASONS, 0)
        for each in self.distrusted.values():
            counts[each.reason] += 1
        return counts


def _millicores(cpu_cores: float) -> int:
    # Rounded up, like a request's MilliValue(): a pod using 0.0004 cores still uses some.
    return math.ceil(cpu_cores * 1000)


def _resources(cpu_cores: float, memory_bytes: int) -> ResourceList:
    return {CPU: _millicores(cpu_cores), MEMORY: memory_bytes}


def _owned_by(report: NodeUsageReport, node: NodeInfo) -> bool:
    return any(
        owner.kind == "Node"
        and owner.api_version in ("v1", "")
        and owner.name == node.name
        and owner.uid == node.uid
        and bool(node.uid)
        for owner in report.owners
    )


def _implausible(report: NodeUsageReport, node: NodeInfo) -> str:
    """What exceeds ``PLAUSIBLE_USAGE_MULTIPLE`` x the Node's allocatable; "" when nothing."""
    cpu_limit = PLAUSIBLE_USAGE_MULTIPLE * node.allocatable.get(CPU, 0) / 1000
    memory_limit = PLAUSIBLE_USAGE_MULTIPLE * node.allocatable.get(MEMORY, 0)
    pods_cpu = sum(pod.cpu_cores for pod in report.pods)
    pods_memory = sum(pod.memory_bytes for pod in report.pods)
    for what, used, limit in (
        ("usage.cpu", report.cpu_cores, cpu_limit),
        ("usage.memory", report.memory_bytes, memory_limit),
        ("the pods' cpu", pods_cpu, cpu_limit),
        ("the pods' memory", pods_memory, memory_limit),
    ):
        if used > limit:
            return (
                f"{what} {used:g} is more than {PLAUSIBLE_USAGE_MULTIPLE:g} x the Node's "
                f"allocatable ({limit / PLAUSIBLE_USAGE_MULTIPLE:g})"
            )
    return ""


def judge(
    report: NodeUsageReport,
    node: NodeInfo | None,
    *,
    now: float,
    changed_at: float,
    witnessed: bool = False,
) -> NodeUsage | Distrusted:
    """One report: its ``NodeUsage`` when it is believed, else why not.

    ``now`` is the descheduler's wall clock (offline: the snapshot's capture time);
    ``changed_at`` when the descheduler last saw the report change, on that clock;
    ``witnessed`` whether it saw that change happen (not just found the report).
    """
    name = report.node
    if node is None:
        return Distrusted(name, NO_NODE, "no Node of that name")
    if not _owned_by(report, node):
        return Distrusted(
            name, NOT_OWNED, f"not owned by the Node {node.name} (uid {node.uid or '?'})"
        )
    if report.problems:
        return Distrusted(name, INVALID, "; ".join(report.problems))
    if why := _implausible(report, node):
        return Distrusted(name, IMPLAUSIBLE, why)
    written = report.observed_time
    if written is not None and written > now + CLOCK_SKEW_SECONDS:
        return Distrusted(
            name, FUTURE, f"observedTime is {written - now:.0f}s ahead of the descheduler's clock"
        )
    # Never sampled: nothing to believe yet. Else the writer's time may only make it older.
    changed_at = -math.inf if written is None else min(changed_at, written)
    return NodeUsage(
        node=name,
        usage=_resources(report.cpu_cores, report.memory_bytes),
        pod_usage={pod.uid: _resources(pod.cpu_cores, pod.memory_bytes) for pod in report.pods},
        stale=now - changed_at > report.stale_after,
        shutting_down=report.shutdown != "none",
        gated=report.gate_held,
        agent_stopped=report.agent_stopped,
        shutdown_completed=report.shutdown == "completed",
        boot_id=report.boot_id,
        changed_at=changed_at,
        stale_after=report.stale_after,
        change_witnessed=witnessed,
    )


def judge_all(
    reports: Iterable[tuple[NodeUsageReport, float, bool]],
    nodes: Mapping[str, NodeInfo],
    now: float,
) -> Verdicts:
    """Every report with its ``changed_at`` (wall seconds on the descheduler's clock) and
    whether that change was witnessed."""
    verdicts = Verdicts()
    for report, changed_at, witnessed in reports:
        verdict = judge(
            report, nodes.get(report.node), now=now, changed_at=changed_at, witnessed=witnessed
        )
        if isinstance(verdict, Distrusted):
            verdicts.distrusted[report.node] = verdict
        else:
            verdicts.usage[report.node] = verdict
    return verdicts
