"""Event-driven cycles (ours, opt-in; upstream #696, #1254): when to run a cycle early.

Upstream runs a cycle every ``--descheduling-interval``, so a node that just became Ready,
or a node that just crossed LowNodeUtilization's thresholds, waits up to a whole interval.
With ``eventDrivenCycles`` on, three kinds of cache event also ask for a cycle:

- a node becomes Ready (it was NotReady, or it is new and Ready): new room;
- a node's NodeReport crosses LowNodeUtilization's ``thresholds`` or ``targetThresholds``
  (its class among under-, appropriately and over-utilized changes; absolute thresholds
  only: in deviation mode the bounds move with the mean, so any report could cross them);
- a critical add-on becomes Unschedulable (what CriticalAddonRescue acts on): the cycle is
  asked for when the rescue's ``unschedulableSeconds`` have passed, not before.

The cycle is the same; only its start moves. ``CycleSchedule`` decides when the next cycle
starts: at the interval as before, or early for a trigger, but never sooner than
``minCycleSpacing`` (default 30 s) after the previous start, so a flapping node cannot make
the descheduler run back to back. Pure: the runtime feeds events and monotonic times in.
The initial list of each cache (``SYNCED``) triggers nothing: the first cycle covers it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.keys import UNSCHEDULABLE_SINCE
from agent.kube.nodereports import NodeUsageReport

NODE_READY = "node became Ready"
UTILIZATION = "node crossed the utilization thresholds"
ADDON_UNSCHEDULABLE = "critical add-on Unschedulable"


@dataclass
class CycleSchedule:
    """When the next cycle starts: the interval, or a trigger, spaced at least ``min_spacing``."""

    interval: float
    min_spacing: float
    last_start: float | None = None
    trigger: str = ""
    """Why an early cycle is wanted; empty when none is."""
    triggered_at: float = 0.0

    def fire(self, reason: str, at: float) -> None:
        """Ask for a cycle at monotonic ``at`` (or soon after); the earliest unserved ask wins."""
        if not self.trigger or at < self.triggered_at:
            self.trigger, self.triggered_at = reason, at

    def started(self, now: float) -> None:
        """A cycle starts now; it serves every ask made so far."""
        self.last_start, self.trigger = now, ""

    def next_start(self) -> float | None:
        """Monotonic time of the next cycle; ``None``: no interval and nothing asked."""
        due: list[float] = []
        if self.interval > 0 and self.last_start is not None:
            due.append(self.last_start + self.interval)
        if self.trigger:
            earliest = self.triggered_at
            if self.last_start is not None:
                earliest = max(earliest, self.last_start + self.min_spacing)
            due.append(earliest)
        return min(due) if due else None


Fire = Callable[[str, float], None]
"""``fire(reason, delay)``: ask for a cycle ``delay`` seconds from now (0: at once)."""


@dataclass
class NodeReadyWatch:
    """Node cache events -> "node became Ready"."""

    fire: Fire
    ready: dict[str, bool] = field(default_factory=dict)

    def on_event(self, kind: str, node: NodeInfo | None, items: Mapping[str, NodeInfo]) -> None:
        if kind == "SYNCED":
            self.ready = {name: info.ready for name, info in items.items()}
            return
        if node is None:
            return
        if kind == "DELETED":
            self.ready.pop(node.name, None)
            return
        before = self.ready.get(node.name)
        self.ready[node.name] = node.ready
        if node.ready and before is not True:
            self.fire(NODE_READY, 0.0)


def utilization_class(
    report: NodeUsageReport, thresholds: Mapping[str, float], targets: Mapping[str, float]
) -> str:
    """``low`` (every resource under ``thresholds``), ``high`` (any over ``targets``), or
    ``normal``; only ``cpu`` and ``memory`` are reported, other resources count as 0%."""
    percent = {
        "cpu": _percent(report.cpu_cores, report.cpu_allocatable or report.cpu_capacity),
        "memory": _percent(
            report.memory_bytes, report.memory_allocatable or report.memory_capacity
        ),
    }
    if any(percent.get(name, 0.0) > limit for name, limit in targets.items()):
        return "high"
    if all(percent.get(name, 0.0) < limit for name, limit in thresholds.items()):
        return "low"
    return "normal"


def _percent(used: float, total: float) -> float:
    return 100.0 * used / total if total > 0 else 0.0


@dataclass
class UtilizationWatch:
    """NodeReport events -> "node crossed the utilization thresholds"."""

    fire: Fire
    thresholds: Mapping[str, float]
    targets: Mapping[str, float]
    classes: dict[str, str] = field(default_factory=dict)

    def on_report(self, kind: str, report: NodeUsageReport | None) -> None:
        if report is None:
            return
        if kind == "DELETED":
            self.classes.pop(report.node, None)
            return
        now = utilization_class(report, self.thresholds, self.targets)
        before = self.classes.get(report.node)
        self.classes[report.node] = now
        if kind != "SYNCED" and before is not None and before != now:
            self.fire(UTILIZATION, 0.0)


@dataclass
class AddonWatch:
    """Pod cache events -> "critical add-on Unschedulable" (a pod newly seen so), asked for
    when the rescue may act on it: ``delay`` says how long from now that is."""

    fire: Fire
    critical: Callable[[PodInfo], bool]
    delay: Callable[[PodInfo], float] = lambda _pod: 0.0
    waiting: set[str] = field(default_factory=set)

    def on_event(self, kind: str, pod: PodInfo | None) -> None:
        if kind == "SYNCED":
            self.waiting.clear()
            return
        if pod is None:
            return
        unschedulable = (
            kind != "DELETED" and UNSCHEDULABLE_SINCE in pod.extra and self.critical(pod)
        )
        if not unschedulable:
            self.waiting.discard(pod.key)
            return
        if pod.key not in self.waiting:
            self.waiting.add(pod.key)
            self.fire(ADDON_UNSCHEDULABLE, self.delay(pod))
