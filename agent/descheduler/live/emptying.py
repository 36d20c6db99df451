"""The soft taints on the nodes HighNodeUtilization empties: on while their pods' replacements
find a place, then off.

A plan asks for ``kubelet-companion.io/emptying:PreferNoSchedule`` on each node it evicts
from (``core.plugins.nodeutilization.highnodeutilization``), and ``TaintActions.apply`` adds
them before the first eviction, each tracked here as soon as it lands (``added``). Their work
is done once every evicted pod's controller has a new pod bound to a node (``track`` says
which pods went): then they come off. Each also comes off ``EMPTYING_HOLD_SECONDS`` after
the last cycle that emptied its node, whatever became of the replacements (a controller that
scaled down, a replacement nothing can schedule: a soft taint must not outlive its reason).
A removal that still fails a further hold later is given up, with a warning: the next
process's start-up sweep takes the taint off.

A replacement is a pod of the same controller that was not in the cycle's snapshot and is
bound: pod UIDs say so exactly, where creation times (whole seconds) could not. The pod
cache's events say when one is bound (``on_pod_event``), so nothing scans 150,000 pods; after
a relist, which replays no events, one scan of the cache stands in for them.

A graceful stop takes every tracked taint off (``close``), whether or not this replica still
leads, and lets no new one be added. A run that was killed left them in our record on the
Lease (``recordedtaints``: each is recorded before it is added, and forgotten only once it is
off); the first cycle a process leads (again) removes them (``leftovers``). A node's
annotation alone is never taken for one of them: any node may write its own.

Concurrency: everything runs on the event loop, which also owns the pod cache and calls the
listener.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import structlog

from agent.descheduler.live.leftovers import remove_leftovers
from agent.descheduler.live.recordedtaints import RecordedTaints
from agent.descheduler.model.cluster import ClusterSnapshot, PodInfo
from agent.descheduler.model.taintrecord import TaintRecord
from agent.kubesemantics.nodekeys import EMPTYING_ANNOTATION
from agent.kubesemantics.taintownership import emptying_taint

EMPTYING_HOLD_SECONDS = 60.0
"""The longest an emptying taint stays on after the last cycle that emptied its node."""

_log = structlog.get_logger(subsystem="descheduler.taints")


def _controller_uid(pod: PodInfo) -> str:
    controller = pod.controller
    return controller.uid if controller is not None else ""


class EmptyingTracker:
    """The emptying taints this process added, until their replacements are bound."""

    def __init__(
        self,
        taints: RecordedTaints,
        monotonic: Callable[[], float],
        *,
        hold_seconds: float = EMPTYING_HOLD_SECONDS,
    ) -> None:
        self.taints = taints
        self.monotonic = monotonic
        self.hold_seconds = hold_seconds
        self.closed = False
        """Set by a graceful stop: no taint is added any more."""
        self._deadlines: dict[str, float] = {}
        """Node -> monotonic seconds after which its taint goes, replaced or not."""
        self._wanted: Counter[str] = Counter()
        """Controller UID -> pods the last cycle evicted from the emptied nodes."""
        self._known: set[str] = set()
        """UIDs of those controllers' pods in that cycle's snapshot: none is a replacement."""
        self._bound: dict[str, str] = {}
        """Pods seen bound while taints are tracked: UID -> controller UID."""
        self._rescan = False

    @property
    def pending(self) -> bool:
        return bool(self._deadlines)

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(self._deadlines)

    def added(self, node: str) -> None:
        """Our taint landed on ``node``: it comes off a hold from now at the latest."""
        self._deadlines[node] = self.monotonic() + self.hold_seconds

    def track(self, evicted: Iterable[PodInfo], snapshot: ClusterSnapshot) -> None:
        """After a cycle's evictions: the taints wait for the replacements of ``evicted``
        (the pods that went from the emptied nodes)."""
        self._wanted = Counter(uid for pod in evicted if (uid := _controller_uid(pod)))
        self._known = {
            pod.uid
            for pods in snapshot.pods_by_node.values()
            for pod in pods
            if _controller_uid(pod) in self._wanted
        }

    def on_pod_event(self, kind: str, pod: PodInfo | None) -> None:
        """The pod cache's listener: remembers the pods bound while taints are tracked."""
        if not self._deadlines:
            return
        if kind == "SYNCED" or pod is None:
            self._rescan = True  # a relist replays no events
        elif kind == "DELETED" or pod.deleting or not pod.node_name:
            self._bound.pop(pod.uid, None)
        elif controller := _controller_uid(pod):
            self._bound[pod.uid] = controller

    def replaced(self, pods: Callable[[], Iterable[PodInfo]]) -> bool:
        """Whether every controller has as many new pods bound as the cycle evicted."""
        if self._rescan:
            self._rescan = False
            for pod in pods():
                self.on_pod_event("MODIFIED", pod)
        wanted, known = self._wanted, self._known
        bound = Counter(c for uid, c in self._bound.items() if c in wanted and uid not in known)
        return all(bound[uid] >= count for uid, count in wanted.items())

    async def settle(self, pods: Callable[[], Iterable[PodInfo]]) -> list[str]:
        """Remove the taints whose replacements are bound or whose hold is over; the nodes
        they came off."""
        if not self._deadlines:
            return []
        now = self.monotonic()
        done = self.replaced(pods)
        due = [node for node, deadline in self._deadlines.items() if done or now >= deadline]
        return await self._remove(sorted(due), now)

    async def close(self) -> list[str]:
        """At a graceful stop: no more taints, and every tracked one off now."""
        self.closed = True
        return await self._remove(sorted(self._deadlines), self.monotonic())

    async def _remove(self, nodes: list[str], now: float) -> list[str]:
        removed, failed = await self.taints.remove_all([(node, emptying_taint()) for node in nodes])
        for node, error in failed.items():
            deadline = self._deadlines.get(node)
            if deadline is None:
                continue  # taken off meanwhile (a stop during a settle)
            if now >= deadline + self.hold_seconds:
                _log.warning(
                    "emptying taint not removed; left to the next start",
                    node=node,
                    error=str(error),
                )
                del self._deadlines[node]
            else:
                _log.warning("emptying taint not removed yet", node=node, error=str(error))
        for node in removed:
            self._deadlines.pop(node, None)
        if not self._deadlines:
            self._wanted, self._known, self._bound = Counter(), set(), {}
        if removed:
            _log.info("emptying taints removed", nodes=len(removed), sample=removed[:5])
        return removed

    async def remove_leftovers(self, record: TaintRecord) -> list[str]:
        """Remove the emptying taints an earlier run left (our record names them)."""
        return await remove_leftovers(
            self.taints,
            record,
            annotation=EMPTYING_ANNOTATION,
            tracked=self._deadlines,
            what="emptying",
        )
