"""RemovePodsViolatingNodeAffinity (Deschedule): evict pods whose node no longer suits their
node affinity, when they have somewhere better to go (upstream ``node_affinity.go``).

``nodeAffinityType`` lists the checks to run, in order:

- ``requiredDuringSchedulingIgnoredDuringExecution``: the pod has required node affinity,
  its node no longer matches its nodeSelector and required affinity (the node's labels
  changed), and the pod fits some node of the cycle (``NodeFit``: ``PodFitsAnyNode``);
- ``preferredDuringSchedulingIgnoredDuringExecution``: the pod has preferred node affinity,
  and some other node of the cycle both fits it and scores a higher preferred weight than
  its own node.

Candidates are a node's unfinished pods that pass the ``namespaces`` and ``labelSelector``
args and the evictor's filter and preEvictionFilter (DefaultEvictor's ``nodeFit`` applies). A
node limit moves on to the next node, the total limit ends the run, a namespace limit skips
the pod.

Where we differ on purpose: for ``preferred...`` upstream compares the best weight of *any*
node with the current one and, separately, asks that the pod fit *any* node, its own
included (which it nearly always does), so a pod is evicted toward a better node that has no
room and lands where it was (the ping-pong of upstream #707). We ask for one node that is both
better and fits. Upstream logs an unknown ``nodeAffinityType`` at run time; we reject it when
the policy loads. Pods go by namespace and name, not informer order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.nodeeviction import evict_in_order
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.rules.nodefit import NodeFit
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.nodeaffinity import (
    node_selector_mismatch,
    preferred_affinity_weight,
    required_affinity_mismatch,
)
from agent.kubesemantics.wellknown import FINISHED_PHASES

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

Verdict = Callable[[PodInfo, NodeInfo, Sequence[NodeInfo]], str | None]
"""Why the pod should leave its node, or ``None`` to keep it."""


@dataclass(frozen=True)
class RemovePodsViolatingNodeAffinityArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)
    node_affinity_type: tuple[
        Literal[
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ],
        ...,
    ] = setting(factory=tuple)

    def validate(self) -> list[FieldError]:
        if not self.node_affinity_type:
            return [FieldError("nodeAffinityType", "nodeAffinityType needs to be set")]
        return []


def _node_affinity(pod: PodInfo) -> dict[str, object]:
    found = (pod.affinity or {}).get("nodeAffinity")
    return found if isinstance(found, dict) else {}


def has_node_affinity(pod: PodInfo, affinity_type: str) -> bool:
    """``PodHasNodeAffinity``: a required selector is set, or a preferred term is listed."""
    value = _node_affinity(pod).get(affinity_type)
    return value is not None if affinity_type == REQUIRED else bool(value)


class RemovePodsViolatingNodeAffinity:
    name = "RemovePodsViolatingNodeAffinity"

    def __init__(self, args: RemovePodsViolatingNodeAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)
        self.node_fit = NodeFit(handle.snapshot)

    def required_verdict(
        self, pod: PodInfo, node: NodeInfo, nodes: Sequence[NodeInfo]
    ) -> str | None:
        if not has_node_affinity(pod, REQUIRED):
            return None
        mismatch = node_selector_mismatch(pod.node_selector, node.labels) or (
            required_affinity_mismatch({"affinity": pod.affinity}, node.labels, node.name)
        )
        if mismatch is None or not self.node_fit.fits_any(pod, nodes):
            return None
        return f"node no longer matches: {mismatch}"

    def preferred_verdict(
        self, pod: PodInfo, node: NodeInfo, nodes: Sequence[NodeInfo]
    ) -> str | None:
        if not has_node_affinity(pod, PREFERRED):
            return None
        spec = {"affinity": pod.affinity}
        here = preferred_affinity_weight(spec, node.labels, node.name)
        for other in nodes:
            if other.name == node.name:
                continue
            weight = preferred_affinity_weight(spec, other.labels, other.name)
            if weight > here and self.node_fit.fits(pod, other):
                return f"node {other.name} has preferred weight {weight} > {here} and fits"
        return None

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:
        verdicts: dict[str, Verdict] = {
            REQUIRED: self.required_verdict,
            PREFERRED: self.preferred_verdict,
        }
        for affinity_type in self.args.node_affinity_type:
            if not self._process(nodes, affinity_type, verdicts[affinity_type]):
                return

    def _process(self, nodes: Sequence[NodeInfo], affinity_type: str, verdict: Verdict) -> bool:
        """Evict what ``verdict`` condemns; ``False`` once the total limit is reached."""
        evictor = self.handle.evictor
        for node in nodes:
            condemned = self._condemned(node, nodes, affinity_type, verdict)
            if not evict_in_order(evictor, self.name, condemned):
                return False
        return True

    def _condemned(
        self, node: NodeInfo, nodes: Sequence[NodeInfo], affinity_type: str, verdict: Verdict
    ) -> Iterator[tuple[PodInfo, str]]:
        pods = sorted(self.handle.snapshot.pods_on(node.name), key=lambda p: (p.namespace, p.name))
        for pod in pods:
            # The checks are ANDed, as upstream's; the cheap ones go first, so the
            # common pod (no node affinity) never reaches the evictor's nodeFit.
            if not has_node_affinity(pod, affinity_type):
                continue
            if pod.phase in FINISHED_PHASES or not self.pod_filter.admits_scope(pod):
                continue
            if not self.pod_filter.admits_eviction(pod):
                continue
            reason = verdict(pod, node, nodes)
            if reason is not None:
                yield pod, reason
