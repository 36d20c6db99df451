"""The phase plan: which pods die in which phase, with which grace period.

kubelet's ``GracefulNodeShutdownBasedOnPodPriority`` is the reference, and operators tune
their priority classes against it, so grouping follows its rule exactly: a pod joins the
bucket with the highest priority at or below its own (a missing priority counts as 0);
below the lowest bucket it joins the lowest, above the highest the highest.

Where we differ, we do so on purpose:
- mirror and static pods are skipped (they die with the node; deleting a mirror pod does
  not stop its containers and the kubelet recreates it at once);
- DaemonSet pods are skipped unless configured (their controller would recreate them on
  this node while it goes down);
- pods that already finished (``Succeeded``/``Failed``) have nothing left to terminate;
- a grace period of 0 is sent as 1 s, because 0 through the API is a *force* delete that
  removes the object before its containers have stopped.

The phases' clock is fixed once, beside the buckets (``agent.config.shutdown``): each
bucket's deadline offset (its seconds plus those of every bucket before it,
``phase_windows``) and the budget (the last offset). The plan, the state file's record and,
through the record, the deadlines all read these; none adds the seconds up again. Budgets
are whole seconds throughout, as kubelet's ``shutdownGracePeriodSeconds`` are.

Pure: pods in (plain dicts), a frozen plan out.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.config.shutdown import PriorityBucket, phase_windows
from agent.kubesemantics.pods import (
    is_daemon_set_pod,
    is_finished,
    is_mirror_pod,
    is_static_pod,
    pod_priority,
)

DEFAULT_TERMINATION_GRACE_SECONDS = 30
"""What the API server defaults ``terminationGracePeriodSeconds`` to."""
MIN_API_GRACE_SECONDS = 1

JsonObject = dict[str, Any]


class Timed(Protocol):
    """A phase with a place on the shutdown's clock (a plan's, a record's, a window)."""

    @property
    def deadline_offset_seconds(self) -> int: ...


def total_seconds(phases: Sequence[Timed]) -> int:
    """The budget of ``phases`` (in running order): the last one's deadline offset, 0 for none."""
    return phases[-1].deadline_offset_seconds if phases else 0


@dataclass(frozen=True)
class PodTarget:
    """A pod to terminate, and the grace period we will ask for."""

    namespace: str
    name: str
    uid: str
    priority: int
    grace_seconds: int
    bucket: int
    """The priority of the bucket the pod belongs to: the label its result is counted under,
    whichever phase stops it (a pod that arrives after its own phase joins a later one)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def within(self, bucket_seconds: int) -> PodTarget:
        """This target stopped in a phase of ``bucket_seconds`` (not its own: it arrived
        late), its grace capped by that phase's as well, never a force delete."""
        capped = max(MIN_API_GRACE_SECONDS, min(self.grace_seconds, bucket_seconds))
        return dataclasses.replace(self, grace_seconds=capped)


@dataclass(frozen=True)
class SkippedPod:
    namespace: str
    name: str
    reason: str  # "mirror", "static", "daemonset", "finished"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Phase:
    """One priority bucket: its priority range, its budget, and its pods."""

    index: int
    priority: int
    min_priority: int | None
    """Lowest priority that lands here (``None``: no lower bound, the first bucket)."""
    max_priority: int | None
    """Highest priority that lands here (``None``: no upper bound, the last bucket)."""
    budget_seconds: int
    deadline_offset_seconds: int
    """Seconds from the shutdown's start by which this phase must be over."""
    pods: tuple[PodTarget, ...]


@dataclass(frozen=True)
class PhasePlan:
    phases: tuple[Phase, ...]
    """Every bucket in running order (ascending priority), empty ones included."""
    skipped: tuple[SkippedPod, ...]

    @property
    def budget_seconds(self) -> int:
        return total_seconds(self.phases)

    def phase_for(self, index: int) -> Phase:
        return self.phases[index]


def bucket_index(priorities: Sequence[int], priority: int) -> int:
    """kubelet's rule over ascending ``priorities``: highest bucket <= priority, else the lowest."""
    return max(bisect.bisect_right(priorities, priority) - 1, 0)


def skip_reason(pod: JsonObject, *, include_daemon_set_pods: bool) -> str | None:
    """Why we leave this pod alone, or ``None`` when it is ours to terminate."""
    if is_mirror_pod(pod):
        return "mirror"
    if is_static_pod(pod):
        return "static"
    if is_finished(pod):
        return "finished"
    if not include_daemon_set_pods and is_daemon_set_pod(pod):
        return "daemonset"
    return None


def grace_seconds(pod: JsonObject, bucket_seconds: int) -> int:
    """``min(bucket seconds, terminationGracePeriodSeconds)``, never a force delete."""
    own = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    if not isinstance(own, int) or isinstance(own, bool) or own < 0:
        own = DEFAULT_TERMINATION_GRACE_SECONDS
    return max(MIN_API_GRACE_SECONDS, min(bucket_seconds, own))


def _target(pod: JsonObject, bucket: PriorityBucket) -> PodTarget:
    metadata = pod.get("metadata") or {}
    return PodTarget(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        priority=pod_priority(pod),
        grace_seconds=grace_seconds(pod, bucket.shutdown_grace_period_seconds),
        bucket=bucket.priority,
    )


def plan_phases(
    buckets: Sequence[PriorityBucket],
    pods: Iterable[JsonObject],
    *,
    include_daemon_set_pods: bool = False,
) -> PhasePlan:
    """Group ``pods`` into ``buckets`` (ascending by priority), kubelet's way."""
    ordered = sorted(buckets, key=lambda bucket: bucket.priority)
    if not ordered:
        return PhasePlan(phases=(), skipped=())
    windows = phase_windows(ordered)
    priorities = [bucket.priority for bucket in ordered]
    members: list[list[PodTarget]] = [[] for _ in ordered]
    skipped_pods: list[SkippedPod] = []
    for pod in pods:
        reason = skip_reason(pod, include_daemon_set_pods=include_daemon_set_pods)
        if reason is not None:
            skipped_pods.append(SkippedPod(**_name_of(pod), reason=reason))
            continue
        index = bucket_index(priorities, pod_priority(pod))
        members[index].append(_target(pod, ordered[index]))
    phases = tuple(
        Phase(
            index=index,
            priority=window.priority,
            min_priority=None if index == 0 else window.priority,
            max_priority=priorities[index + 1] - 1 if index + 1 < len(ordered) else None,
            budget_seconds=window.budget_seconds,
            deadline_offset_seconds=window.deadline_offset_seconds,
            pods=tuple(sorted(members[index], key=lambda t: (t.priority, t.key))),
        )
        for index, window in enumerate(windows)
    )
    return PhasePlan(phases=phases, skipped=tuple(sorted(skipped_pods, key=lambda s: s.key)))


def _name_of(pod: JsonObject) -> dict[str, str]:
    metadata = pod.get("metadata") or {}
    return {
        "namespace": str(metadata.get("namespace") or ""),
        "name": str(metadata.get("name") or ""),
    }
