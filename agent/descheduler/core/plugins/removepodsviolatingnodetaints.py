"""RemovePodsViolatingNodeTaints (Deschedule): evict pods that do not tolerate a NoSchedule
taint their node has gained since they were scheduled (upstream ``node_taint.go``).

Per node, the pods that are not finished, pass the ``namespaces`` and ``labelSelector`` args
and the evictor's filter and preEvictionFilter (so DefaultEvictor's ``nodeFit`` applies) are
checked against the node's taints. The taints that count have effect NoSchedule (and
PreferNoSchedule with ``includePreferNoSchedule``), minus ``excludedTaints``, and with
``includedTaints``, only those listed. Both lists hold ``key`` or ``key=value`` entries and
cannot be given together. NoExecute taints are the taint manager's job, as upstream says.

A node limit moves on to the next node, the total limit ends the run, and a namespace limit
skips the pod, as upstream's error handling does. Where we differ on purpose: upstream lists a
node's pods in informer order; we go by namespace and name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.nodeeviction import evict_in_order
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.taintownership import is_emptying_taint
from agent.kubesemantics.tolerations import describe_taint, tolerates
from agent.kubesemantics.wellknown import FINISHED_PHASES, NO_SCHEDULE, PREFER_NO_SCHEDULE


@dataclass(frozen=True)
class RemovePodsViolatingNodeTaintsArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)
    include_prefer_no_schedule: bool = setting(False)
    excluded_taints: tuple[str, ...] = setting(factory=tuple)
    included_taints: tuple[str, ...] | None = setting(None)
    """``None`` (absent) includes every taint; an empty list, as upstream reads it, none."""

    def validate(self) -> list[FieldError]:
        if self.excluded_taints and self.included_taints:
            return [
                FieldError(
                    "includedTaints",
                    "either includedTaints or excludedTaints can be set, but not both",
                )
            ]
        return []


def _listed(taint: Mapping[str, Any], entries: frozenset[str]) -> bool:
    """Named by ``key``, or by ``key=value`` when the taint has a value."""
    key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
    return key in entries or (bool(value) and f"{key}={value}" in entries)


class RemovePodsViolatingNodeTaints:
    name = "RemovePodsViolatingNodeTaints"

    def __init__(self, args: RemovePodsViolatingNodeTaintsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)
        self.effects = frozenset(
            {NO_SCHEDULE, PREFER_NO_SCHEDULE} if args.include_prefer_no_schedule else {NO_SCHEDULE}
        )
        self.excluded = frozenset(args.excluded_taints)
        self.included = None if args.included_taints is None else frozenset(args.included_taints)

    def counts(self, taint: Mapping[str, Any]) -> bool:
        """The taint is one this plugin enforces."""
        if taint.get("effect") not in self.effects or _listed(taint, self.excluded):
            return False
        if is_emptying_taint(taint):
            return False  # ours, for the scheduler only (``taintownership``)
        return self.included is None or _listed(taint, self.included)

    def untolerated(self, pod: PodInfo, node: NodeInfo) -> Mapping[str, Any] | None:
        """The first enforced taint of the node that the pod does not tolerate."""
        for taint in node.taints:
            if self.counts(taint) and not any(tolerates(t, taint) for t in pod.tolerations):
                return taint
        return None

    def _candidate(self, pod: PodInfo) -> bool:
        return (
            pod.phase not in FINISHED_PHASES
            and self.pod_filter.admits_scope(pod)
            and self.pod_filter.admits_eviction(pod)
        )

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:
        evictor = self.handle.evictor
        for node in nodes:
            if not any(self.counts(taint) for taint in node.taints):
                continue  # most nodes: nothing to check, no pod listed
            if not evict_in_order(evictor, self.name, self._condemned(node)):
                return

    def _condemned(self, node: NodeInfo) -> Iterator[tuple[PodInfo, str]]:
        pods = sorted(self.handle.snapshot.pods_on(node.name), key=lambda p: (p.namespace, p.name))
        for pod in pods:
            # ANDed as upstream's checks; the taint first, so tolerating pods never
            # reach the evictor's nodeFit.
            taint = self.untolerated(pod, node)
            if taint is not None and self._candidate(pod):
                yield pod, f"does not tolerate {describe_taint(taint)}"
