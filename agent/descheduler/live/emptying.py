"""The soft taints on the nodes HighNodeUtilization empties: on while their pods' replacements
find a place, then off.

A plan asks for ``kubelet-companion.io/emptying:PreferNoSchedule`` on each node it evicts
from (``core.plugins.nodeutilization.highnodeutilization``), and ``TaintActions.apply`` adds
them before the first eviction. Their work is done once every evicted pod's controller has a
new pod bound to a node: then this tracker takes them off, or after ``EMPTYING_HOLD_SECONDS``
at the latest, whatever became of the replacements (a controller that scaled down, a
replacement nothing can schedule: a soft taint must not outlive its reason). A cycle that
empties nodes while an earlier cycle's taints are still on keeps those on too, and the wait
starts again from the new cycle's evictions.

A replacement is a pod of the same controller that was not in the cycle's snapshot and is
bound: pod UIDs say so exactly, where creation times (whole seconds) could not.

A run that stopped before its taints came off (killed, or its stop ran out of time) left our
annotation on those nodes; the first cycle a process leads removes them, as it does rescue
taints. A graceful stop removes the ones it tracks.

Concurrency: everything runs on the event loop, which also owns the pod cache read here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import structlog

from agent.descheduler.model.cluster import ClusterSnapshot, NodeInfo, PodInfo
from agent.kube.errors import KubeError
from agent.kube.ownedtaints import OwnedTaints
from agent.kube.taintownership import EMPTYING_ANNOTATION, emptying_taint

EMPTYING_HOLD_SECONDS = 60.0
"""The longest an emptying taint stays on after its cycle's evictions, replaced or not."""

_log = structlog.get_logger(subsystem="descheduler.taints")


def _controller_uid(pod: PodInfo) -> str:
    controller = pod.controller
    return controller.uid if controller is not None else ""


@dataclass
class _Wait:
    wanted: Counter[str]
    """Controller UID -> how many of its pods the cycle evicted from the emptied nodes."""
    known: set[str]
    """UIDs of those controllers' pods in the cycle's snapshot: none of them is a replacement."""
    deadline: float
    nodes: set[str] = field(default_factory=set)


class EmptyingTracker:
    """The emptying taints this process added, until their replacements are bound."""

    def __init__(
        self,
        taints: OwnedTaints,
        monotonic: Callable[[], float],
        *,
        hold_seconds: float = EMPTYING_HOLD_SECONDS,
    ) -> None:
        self.taints = taints
        self.monotonic = monotonic
        self.hold_seconds = hold_seconds
        self._wait: _Wait | None = None

    @property
    def pending(self) -> bool:
        return self._wait is not None

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(self._wait.nodes) if self._wait is not None else frozenset()

    def track(
        self, nodes: Iterable[str], evicted: Iterable[PodInfo], snapshot: ClusterSnapshot
    ) -> None:
        """After a cycle's evictions: ``nodes`` carry our taint until the replacements of
        ``evicted`` (the pods that went from them) are bound."""
        wanted = Counter(uid for pod in evicted if (uid := _controller_uid(pod)))
        known = {
            pod.uid
            for pods in snapshot.pods_by_node.values()
            for pod in pods
            if _controller_uid(pod) in wanted
        }
        carried = self._wait.nodes if self._wait is not None else set()
        self._wait = _Wait(wanted, known, self.monotonic() + self.hold_seconds, {*carried, *nodes})

    def replaced(self, pods: Iterable[PodInfo]) -> bool:
        """Whether every controller has as many new pods bound as the cycle evicted."""
        wait = self._wait
        if wait is None:
            return True
        bound = Counter(
            uid
            for pod in pods
            if pod.node_name
            and not pod.deleting
            and pod.uid not in wait.known
            and (uid := _controller_uid(pod)) in wait.wanted
        )
        return all(bound[uid] >= count for uid, count in wait.wanted.items())

    async def settle(self, pods: Callable[[], Iterable[PodInfo]]) -> list[str]:
        """Remove the taints once the replacements are bound or the hold is over; the nodes
        they came off."""
        wait = self._wait
        if wait is None:
            return []
        if self.monotonic() < wait.deadline and not self.replaced(pods()):
            return []
        return await self.release()

    async def release(self) -> list[str]:
        """Remove every tracked taint now; a node whose removal failed stays tracked."""
        wait = self._wait
        if wait is None:
            return []
        removed = []
        for node in sorted(wait.nodes):
            try:
                await self.taints.remove(node, emptying_taint())
            except KubeError as error:
                _log.warning("emptying taint not removed yet", node=node, error=str(error))
                continue
            wait.nodes.discard(node)
            removed.append(node)
        if not wait.nodes:
            self._wait = None
        if removed:
            _log.info("emptying taints removed", nodes=len(removed), sample=removed[:5])
        return removed

    async def remove_leftovers(self, nodes: Iterable[NodeInfo]) -> list[str]:
        """Remove the emptying taints an earlier run left (our annotation names them)."""
        tracked = self.nodes
        removed = []
        for node in nodes:
            if EMPTYING_ANNOTATION not in node.annotations or node.name in tracked:
                continue
            try:
                await self.taints.remove(node.name, emptying_taint())
            except KubeError as error:
                _log.warning(
                    "leftover emptying taint not removed", node=node.name, error=str(error)
                )
                continue
            _log.info("leftover emptying taint removed", node=node.name)
            removed.append(node.name)
        return removed
