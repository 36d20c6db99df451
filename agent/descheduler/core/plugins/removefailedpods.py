"""RemoveFailedPods (Deschedule): evict pods in phase ``Failed`` that match the args
(upstream ``failedpods.go``, ``defaults.go``, ``validation.go``).

A candidate is ``Failed``, admitted by the ``namespaces``/``labelSelector`` args and the
evictor's filter and preEvictionFilter, and:

- at least ``minPodLifetimeSeconds`` old (default 3600; measured from
  ``metadata.creationTimestamp`` to the snapshot's ``now``, whole seconds);
- owned by no kind in ``excludeOwnerKinds``;
- with ``reasons``: one of them is a container's waiting or terminated reason, or the pod's
  ``status.reason`` (init containers too with ``includingInitContainers``);
- with ``exitCodes``: one of them is a terminated container's exit code (init containers too
  with ``includingInitContainers``).

Per node, a node limit ends the node, the total limit ends the plugin.

Where we differ on purpose: a pod whose creation time is after ``now`` (clock skew) is not
old enough; upstream converts the negative age to an unsigned integer, whose value Go leaves
to the platform. Pods on a node go by namespace and name, not in informer order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.config.schema import setting
from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.nodeeviction import evict_in_order
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.podstatus import exit_codes_reason, exited_with, status_of
from agent.kubesemantics.wellknown import FAILED

DEFAULT_MIN_POD_LIFETIME_SECONDS = 3600


@dataclass(frozen=True)
class RemoveFailedPodsArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)
    exclude_owner_kinds: tuple[str, ...] = setting(factory=tuple)
    min_pod_lifetime_seconds: int | None = setting(DEFAULT_MIN_POD_LIFETIME_SECONDS, minimum=0)
    """``null`` takes the default too, as upstream's defaulting of a nil pointer."""
    reasons: tuple[str, ...] = setting(factory=tuple)
    exit_codes: tuple[int, ...] = setting(factory=tuple, check=exit_codes_reason)
    including_init_containers: bool = setting(False)

    @property
    def min_age(self) -> int:
        if self.min_pod_lifetime_seconds is None:
            return DEFAULT_MIN_POD_LIFETIME_SECONDS
        return self.min_pod_lifetime_seconds


class RemoveFailedPods:
    name = "RemoveFailedPods"

    def __init__(self, args: RemoveFailedPodsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.now = handle.snapshot.now
        self.pods = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)
        self.excluded_kinds = frozenset(args.exclude_owner_kinds)
        self.reasons = frozenset(args.reasons)
        self.exit_codes = frozenset(args.exit_codes)

    def old_enough(self, pod: PodInfo) -> bool:
        age = self.now - pod.creation_timestamp
        return age >= 0 and int(age) >= self.args.min_age

    def has_reason(self, pod: PodInfo) -> bool:
        if not self.reasons:
            return True
        # Upstream collects only the reasons that are set, so an empty one never matches.
        status = status_of(pod)
        found = {status.reason}  # the pod is Failed here, as upstream requires for this one
        for each in status.statuses(init=self.args.including_init_containers):
            found.update((each.waiting, each.terminated))
        found.discard("")
        return not found.isdisjoint(self.reasons)

    def candidate(self, pod: PodInfo) -> bool:
        return (
            pod.phase == FAILED
            and self.pods.admits_scope(pod)
            and self.old_enough(pod)
            and not any(owner.kind in self.excluded_kinds for owner in pod.owners)
            and self.has_reason(pod)
            and exited_with(pod, self.exit_codes, init=self.args.including_init_containers)
            and self.pods.admits_eviction(pod)
        )

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:
        evictor = self.handle.evictor
        for node in nodes:
            pods = sorted(
                (pod for pod in self.handle.snapshot.pods_on(node.name) if self.candidate(pod)),
                key=lambda pod: (pod.namespace, pod.name),
            )
            if not evict_in_order(evictor, self.name, ((pod, _reason(pod)) for pod in pods)):
                return


def _reason(pod: PodInfo) -> str:
    status = status_of(pod)
    why = status.reason or next((each.terminated or each.waiting for each in status.containers), "")
    return f"failed ({why})" if why else "failed"
