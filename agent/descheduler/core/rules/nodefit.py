"""Would a pod fit a node: upstream's ``NodeFit``, over one snapshot.

Several callers ask it: the DefaultEvictor's ``nodeFit`` (some other node must fit),
RemovePodsViolatingNodeAffinity (``PodFitsAnyNode``), RemovePodsViolatingTopologySpreadConstraint
(``PodFitsAnyOtherNode`` over the domains below the average) and the offline plan. One
``NodeFit`` per snapshot keeps the summed requests of each node it looked at.

Follows upstream's ``node.NodeFit``, in its order: the node is schedulable; nodeSelector and
required node affinity match; every NoSchedule/NoExecute taint is tolerated; the pod's required
anti-affinity rejects no pod on the node; and, on a node other than its own, allocatable minus
the requests of the node's unfinished pods covers the pod's requests, with a pod slot free. It
does not check pod affinity, topology spread or ports, as upstream does not.

Where we differ on purpose: a node whose agent reports it shutting down, gated or stopped
never fits (``NodeUsage.usable_as_destination``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agent.descheduler.core.rules.antiaffinity import (
    NodeFitAntiAffinity,
    has_required_anti_affinity,
)
from agent.descheduler.core.rules.podindex import PodIndex
from agent.descheduler.model.cluster import PODS, ClusterSnapshot, NodeInfo, PodInfo
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.tolerations import untolerated
from agent.kubesemantics.wellknown import FINISHED_PHASES


class NodeFit:
    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self._requested: dict[str, dict[str, int]] = {}
        self._anti_affinity: NodeFitAntiAffinity | None = None
        """Made when the first pod with required anti-affinity asks (most cycles: never)."""

    def reason(self, pod: PodInfo, node: NodeInfo) -> str | None:  # noqa: PLR0911 - one exit per predicate
        """Why the pod does not fit the node, or ``None`` when it does."""
        if node.unschedulable:
            return "node is not schedulable"
        usage = self.snapshot.node_usage.get(node.name)
        if usage is not None and not usage.usable_as_destination:
            return "node's agent reports it shutting down, gated or stopped"
        if reason := node_selector_mismatch(pod.node_selector, node.labels):
            return reason
        if reason := required_affinity_mismatch(
            {"affinity": pod.affinity or {}}, node.labels, node.name
        ):
            return reason
        if untolerated(node.taints, list(pod.tolerations)):
            return "pod does not tolerate taints on the node"
        if has_required_anti_affinity(pod) and self.anti_affinity().forbidden(pod, node):
            return "pod matches inter-pod anti-affinity rule of other pod on node"
        if pod.node_name != node.name:
            available = self.available(node)
            for name, amount in sorted(pod.requests.items()):
                if amount > available.get(name, 0):
                    return f"insufficient {name}"
            if available.get(PODS, 0) <= 0:
                return f"insufficient {PODS}"
        return None

    def anti_affinity(self) -> NodeFitAntiAffinity:
        """The anti-affinity check over the snapshot's unfinished pods, indexed once."""
        if self._anti_affinity is None:
            index = PodIndex(
                self.snapshot.nodes,
                (
                    pod
                    for name, pods in self.snapshot.pods_by_node.items()
                    if name
                    for pod in pods
                    if pod.phase not in FINISHED_PHASES
                ),
            )
            self._anti_affinity = NodeFitAntiAffinity(index)
        return self._anti_affinity

    def fits(self, pod: PodInfo, node: NodeInfo) -> bool:
        return self.reason(pod, node) is None

    def fits_any(self, pod: PodInfo, nodes: Iterable[NodeInfo]) -> bool:
        """``PodFitsAnyNode``: the pod's own node counts too."""
        return any(self.fits(pod, node) for node in nodes)

    def fits_any_other(self, pod: PodInfo, nodes: Iterable[NodeInfo]) -> bool:
        """``PodFitsAnyOtherNode``: some node of ``nodes`` other than the pod's own fits."""
        return any(node.name != pod.node_name and self.fits(pod, node) for node in nodes)

    def available(self, node: NodeInfo) -> Mapping[str, int]:
        """Allocatable minus the requests of the node's unfinished pods, per resource."""
        requested = self._requested.get(node.name)
        if requested is None:
            requested = {}
            for each in self.snapshot.pods_on(node.name):
                if each.phase in FINISHED_PHASES:
                    continue
                for name, amount in each.requests.items():
                    requested[name] = requested.get(name, 0) + amount
            self._requested[node.name] = requested
        # A resource the node does not offer has zero allocatable, as in nodeAvailableResources.
        names = set(node.allocatable) | set(requested)
        return {name: node.allocatable.get(name, 0) - requested.get(name, 0) for name in names}
