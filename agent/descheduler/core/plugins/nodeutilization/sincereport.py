"""A node's usage from its NodeReport, brought up to the snapshot.

A report is a sample: the agent writes at most once per ``minWriteInterval`` (15 s) for a
usage move, else at its heartbeat, so at a cycle the report read can predate the last
cycle's evictions, and the replacements that landed since. Taken as written, a node keeps
counting the pods it has lost (the next cycle evicts for them again) and a destination
does not count the pods it has gained (the next cycle sends it more). The snapshot knows
both, so the node's figure is settled against it, and nothing else:

- a pod the report lists that is no longer on the node, or is on its way out (deleting,
  our evictions among them, or finished), takes its reported figures off the node's;
- a pod on the node the report does not list, that started after the report's time (or has
  not started yet), adds its requests: the report cannot have seen it, and requests are
  what the scheduler placed it by. A pod the report does not list that was already running
  is left as the report has it: its use is in the node's figure even when the agent could
  not tell its cgroup apart.

Why not hold a node whose report predates our last eviction from it instead: that only
covers the source side (not the destinations the replacements reach, nor pods gone for
other reasons), waits up to a heartbeat for a figure the snapshot can already correct, and
needs a memory of our evictions the offline plan does not have. This rule reads the
snapshot alone, so ``descheduler plan`` applies it the same way.

The report's time is ``NodeUsage.changed_at``: the writer's ``observedTime``, or when the
descheduler saw the report change if that was earlier (``cache.usage``). A pod's start is
the kubelet's ``status.startTime``, on the node's clock, as ``observedTime`` is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.descheduler.model.cluster import CPU, MEMORY, NodeUsage, PodInfo
from agent.descheduler.model.values import ResourceList

MEASURED = (CPU, MEMORY)
"""What a report measures (``pods`` is always the snapshot's count)."""


@dataclass(frozen=True)
class Settled:
    """A node's reported usage with what changed since the report accounted for."""

    usage: dict[str, int]
    gone: int = 0
    """Pods the report lists that have left the node (or are leaving) since."""
    started: int = 0
    """Pods on the node the report cannot have seen, counted at their requests."""

    def facts(self) -> dict[str, int]:
        """What the plan's node facts say of it (``sinceReport``); empty when nothing."""
        if not (self.gone or self.started):
            return {}
        return {"podsGone": self.gone, "podsStarted": self.started}


def settle(report: NodeUsage, staying: Sequence[PodInfo]) -> Settled:
    """``report``'s node usage with the node's pods in the snapshot accounted for.

    ``staying`` is the node's pods that still hold their place on it: neither finished nor
    deleting.
    """
    on_node = {pod.uid for pod in staying}
    usage = {name: report.usage.get(name, 0) for name in MEASURED}
    gone = [figures for uid, figures in report.pod_usage.items() if uid not in on_node]
    for figures in gone:
        _add(usage, figures, -1)
    for name in MEASURED:
        usage[name] = max(0, usage[name])
    started = [
        pod
        for pod in staying
        if pod.uid not in report.pod_usage
        and (pod.start_time is None or pod.start_time > report.changed_at)
    ]
    for pod in started:
        _add(usage, pod.requests, 1)
    return Settled(usage=usage, gone=len(gone), started=len(started))


def _add(usage: dict[str, int], figures: ResourceList, sign: int) -> None:
    for name in MEASURED:
        usage[name] += sign * figures.get(name, 0)
