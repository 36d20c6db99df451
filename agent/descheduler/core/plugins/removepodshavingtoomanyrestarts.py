"""RemovePodsHavingTooManyRestarts (Deschedule): evict pods whose containers restarted at least
``podRestartThreshold`` times (upstream ``toomanyrestarts.go``, ``validation.go``).

A pod is a candidate when the ``namespaces``/``labelSelector`` args and the evictor's filter
and preEvictionFilter admit it (any phase, as upstream's ``ListAllPodsOnANode``), and the sum
of its containers' ``restartCount`` (plus its init containers' with
``includingInitContainers``) is at least the threshold. With ``states``, it must also be in
one of them: its phase (``Running``) or a container waiting for that reason
(``CrashLoopBackOff``; init containers too with ``includingInitContainers``). Per node, the
most restarted go first; a node limit ends the node, the total limit the plugin.

Where we differ on purpose: upstream's sort is unstable, so pods with equal restarts go in
its informer's order; we break the tie by namespace and name, so the plan is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.nodeeviction import evict_in_order
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.podstatus import status_of
from agent.kubesemantics.wellknown import RUNNING

INT32_MAX = 2**31 - 1
ALLOWED_STATES = ("CrashLoopBackOff", RUNNING)
"""A pod phase and a container waiting reason, as upstream allows them (sorted)."""


def _threshold_reason(threshold: int) -> str | None:
    if threshold < 1:
        return "invalid PodsHavingTooManyRestarts threshold: must be at least 1"
    return None


def _states_reason(states: tuple[str, ...]) -> str | None:
    bad = [state for state in states if state not in ALLOWED_STATES]
    if bad:
        return f"{', '.join(map(repr, bad))}: states must be one of [{' '.join(ALLOWED_STATES)}]"
    return None


@dataclass(frozen=True)
class RemovePodsHavingTooManyRestartsArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)
    pod_restart_threshold: int = setting(0, maximum=INT32_MAX, check=_threshold_reason)
    including_init_containers: bool = setting(False)
    states: tuple[str, ...] = setting(factory=tuple, check=_states_reason)

    def validate(self) -> list[FieldError]:
        """The threshold is required: its default (0) is refused as upstream refuses it."""
        reason = _threshold_reason(self.pod_restart_threshold)
        return [FieldError("podRestartThreshold", reason)] if reason else []


class RemovePodsHavingTooManyRestarts:
    name = "RemovePodsHavingTooManyRestarts"

    def __init__(self, args: RemovePodsHavingTooManyRestartsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pods = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)
        self.states = frozenset(args.states)

    def restarts(self, pod: PodInfo) -> int:
        return status_of(pod).restarts(init=self.args.including_init_containers)

    def in_states(self, pod: PodInfo) -> bool:
        """``states`` unset, or the pod's phase or a container's waiting reason is in it."""
        if not self.states or pod.phase in self.states:
            return True
        statuses = status_of(pod).statuses(init=self.args.including_init_containers)
        return any(status.waiting in self.states for status in statuses)

    def candidate(self, pod: PodInfo) -> bool:
        return (
            self.pods.admits_scope(pod)
            and self.restarts(pod) >= self.args.pod_restart_threshold
            and self.in_states(pod)
            and self.pods.admits_eviction(pod)
        )

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:
        evictor = self.handle.evictor
        threshold = self.args.pod_restart_threshold
        for node in nodes:
            ranked = sorted(
                (
                    (self.restarts(pod), pod)
                    for pod in self.handle.snapshot.pods_on(node.name)
                    if self.candidate(pod)
                ),
                key=lambda entry: (-entry[0], entry[1].namespace, entry[1].name),
            )
            condemned = (
                (pod, f"{restarts} restarts (threshold {threshold})") for restarts, pod in ranked
            )
            if not evict_in_order(evictor, self.name, condemned):
                return
