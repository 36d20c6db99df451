"""PodLifeTime (Deschedule): evict pods that match every criterion given, oldest first
(upstream ``pod_lifetime.go``, ``validation.go``).

Each criterion that is set must hold (AND); within one, any entry will do (OR):

- ``maxPodLifeTimeSeconds``: the pod's age, from ``metadata.creationTimestamp`` to the
  snapshot's ``now`` in whole seconds, is greater (a pod from the future is never old);
- ``states``: its phase, its ``status.reason``, or a container's waiting or terminated reason
  (init containers with ``includingInitContainers``, ephemeral ones with
  ``includingEphemeralContainers``) is listed;
- ``conditions``: some condition matches a filter's ``type``, ``status`` and ``reason`` (each
  only when set) and, with ``minTimeSinceLastTransitionSeconds``, last moved at least that long
  ago (a condition without ``lastTransitionTime`` never does);
- ``exitCodes``: a terminated container's exit code is listed (init containers too with
  ``includingInitContainers``);
- ``ownerKinds``: ``include`` needs an owner of a listed kind, ``exclude`` rejects any.

Candidates also pass the ``namespaces``/``labelSelector`` args and the evictor's filter and
preEvictionFilter. They are gathered from every node and evicted oldest first; a node limit
skips the pod, the total limit ends the plugin. Validation is upstream's: at least one of
the four criteria, ``include`` or ``exclude`` (not both) for namespaces and owner kinds,
``states`` from upstream's list, each condition filter setting something.

Where we differ on purpose: upstream's sort is unstable, so pods created in the same second
go in its informer's order; we break the tie by namespace and name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.core.framework.args import IncludeOrExclude, LabelSelector, Namespaces
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.podstatus import (
    PodConditionInfo,
    exit_codes_reason,
    exited_with,
    status_of,
    transition_time,
)
from agent.kubesemantics.wellknown import POD_PHASES

ALLOWED_STATES = frozenset(
    {
        *POD_PHASES,
        # pod status reasons
        "NodeAffinity",
        "NodeLost",
        "Shutdown",
        "UnexpectedAdmissionError",
        # container waiting reasons
        "PodInitializing",
        "ContainerCreating",
        "ImagePullBackOff",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "ErrImagePull",
        "CreateContainerError",
        "InvalidImageName",
        # container terminated reasons
        "OOMKilled",
        "Error",
        "Completed",
        "DeadlineExceeded",
        "Evicted",
        "ContainerCannotRun",
        "StartError",
    }
)


@dataclass(frozen=True)
class OwnerKinds(IncludeOrExclude):
    """Owner kinds by ``include`` or ``exclude``."""

    def admits(self, kinds: Iterable[str]) -> bool:
        if self.include:
            return any(kind in self.include for kind in kinds)
        return not any(kind in self.exclude for kind in kinds)


@dataclass(frozen=True)
class PodConditionFilter:
    """Matches a condition on every field set; unset fields are not checked."""

    type: str = setting("")
    status: str = setting("")
    reason: str = setting("")
    min_time_since_last_transition_seconds: int | None = setting(None, minimum=0)

    def validate(self) -> list[FieldError]:
        if not (self.type or self.status or self.reason) and (
            self.min_time_since_last_transition_seconds is None
        ):
            return [
                FieldError(
                    "",
                    "at least one of type, status, reason, or "
                    "minTimeSinceLastTransitionSeconds must be set",
                )
            ]
        return []

    def matches(self, pod: PodInfo, condition: PodConditionInfo, now: float) -> bool:
        if self.type and condition.type != self.type:
            return False
        if self.status and condition.status != self.status:
            return False
        if self.reason and condition.reason != self.reason:
            return False
        minimum = self.min_time_since_last_transition_seconds
        if minimum is None:
            return True
        moved = transition_time(pod, condition)
        if moved is None:
            return False
        idle = now - moved
        return idle >= 0 and int(idle) >= minimum


def _states_reason(states: tuple[str, ...]) -> str | None:
    bad = [state for state in states if state not in ALLOWED_STATES]
    if bad:
        allowed = " ".join(sorted(ALLOWED_STATES))
        return f"{', '.join(map(repr, bad))}: states must be one of [{allowed}]"
    return None


@dataclass(frozen=True)
class PodLifeTimeArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)
    owner_kinds: OwnerKinds | None = setting(None)
    max_pod_life_time_seconds: int | None = setting(None, minimum=0)
    states: tuple[str, ...] = setting(factory=tuple, check=_states_reason)
    conditions: tuple[PodConditionFilter, ...] = setting(factory=tuple)
    exit_codes: tuple[int, ...] = setting(factory=tuple, check=exit_codes_reason)
    including_init_containers: bool = setting(False)
    including_ephemeral_containers: bool = setting(False)

    def validate(self) -> list[FieldError]:
        if (
            self.max_pod_life_time_seconds is None
            and not self.states
            and not self.conditions
            and not self.exit_codes
        ):
            return [
                FieldError(
                    "",
                    "at least one filtering criterion must be specified "
                    "(maxPodLifeTimeSeconds, states, conditions, or exitCodes)",
                )
            ]
        return []


class PodLifeTime:
    name = "PodLifeTime"

    def __init__(self, args: PodLifeTimeArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.now = handle.snapshot.now
        self.pods = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)
        self.states = frozenset(args.states)
        self.exit_codes = frozenset(args.exit_codes)

    def age(self, pod: PodInfo) -> float:
        return self.now - pod.creation_timestamp

    def old_enough(self, pod: PodInfo) -> bool:
        limit = self.args.max_pod_life_time_seconds
        if limit is None:
            return True
        age = self.age(pod)
        return age >= 0 and int(age) > limit

    def in_states(self, pod: PodInfo) -> bool:
        if not self.states:
            return True
        status = status_of(pod)
        if pod.phase in self.states or status.reason in self.states:
            return True
        return any(
            each.waiting in self.states or each.terminated in self.states
            for each in status.statuses(
                init=self.args.including_init_containers,
                ephemeral=self.args.including_ephemeral_containers,
            )
        )

    def owned_as_asked(self, pod: PodInfo) -> bool:
        kinds = self.args.owner_kinds
        return kinds is None or kinds.admits(owner.kind for owner in pod.owners)

    def in_conditions(self, pod: PodInfo) -> bool:
        filters = self.args.conditions
        if not filters:
            return True
        conditions = status_of(pod).conditions
        return any(f.matches(pod, c, self.now) for f in filters for c in conditions)

    def candidate(self, pod: PodInfo) -> bool:
        return (
            self.pods.admits_scope(pod)
            and self.old_enough(pod)
            and self.in_states(pod)
            and self.owned_as_asked(pod)
            and self.in_conditions(pod)
            and exited_with(pod, self.exit_codes, init=self.args.including_init_containers)
            and self.pods.admits_eviction(pod)
        )

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:
        pods_on = self.handle.snapshot.pods_on
        oldest_first = sorted(
            (pod for node in nodes for pod in pods_on(node.name) if self.candidate(pod)),
            key=lambda pod: (pod.creation_timestamp, pod.namespace, pod.name),
        )
        evictor = self.handle.evictor
        for pod in oldest_first:
            try:
                evictor.evict(pod, self.name, f"age {int(self.age(pod))}s")
            except (NodeLimitReached, NamespaceLimitReached):
                continue  # upstream: a node limit skips the pod, not the node's others
            except TotalLimitReached:
                return
