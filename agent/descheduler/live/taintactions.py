"""Carrying out a plan's taints: before its evictions, and undoing rescue taints in time.

The pure plugins only ask (``Plan.taints``); this is where the asks meet the API server,
through ``recordedtaints`` (our record of them on the Lease first, then guarded node patches
with ownership marked on the node).

- ``apply`` runs before any eviction of the plan is sent. It records every taint it is about
  to add in one Lease write; when that fails, none is added. A rescue taint that could not be
  added (a conflict that outlasted the retries, a taint someone else put in its slot) cancels
  that rescue's evictions: without the taint, the room would go to whatever is pending next.
- ``RescueTracker`` remembers each rescue taint it added, and removes it once the add-on is
  bound to a node (or gone), or after the rescue's timeout; ``adopt`` takes over the ones an
  earlier run or another leader left in flight (our record names them, with their end).
- HighNodeUtilization's soft emptying taints go the same way, once the replacements of the
  pods that left are bound (``emptying``). One that could not be added costs nothing but
  the steering: its node's evictions still go.
- Events ``CriticalAddonRescue`` on the add-on and on the node name the evicted pods;
  ``NodeShutdownRecovery`` posts one on the node when it adds or removes out-of-service.

Concurrency: everything runs on the event loop; the cache lookups (``PodLookup``) read the
caches the loop owns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from agent.descheduler.core.plugins.criticaladdonrescue import NAME as RESCUE
from agent.descheduler.live.emptying import EmptyingTracker
from agent.descheduler.live.evictor import EvictionResult
from agent.descheduler.live.recordedtaints import RecordedTaints, TaintRecordFull, key_of
from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.model.taintrecord import RecordedTaint, RecordKey, TaintRecord
from agent.descheduler.plan.shape import PlannedEviction, TaintChange
from agent.kube.errors import KubeError
from agent.kube.events import EventSink, ObjectRef
from agent.kubesemantics.nodekeys import EMPTYING_TAINT_KEY, RESCUE_ANNOTATION
from agent.kubesemantics.taintownership import (
    OwnedTaint,
    emptying_taint,
    out_of_service_taint,
    rescue_taint,
    rescue_taint_valued,
)

PodLookup = Callable[[str], PodInfo | None]
"""``namespace/name`` -> the cached pod, ``None`` when there is none."""

_log = structlog.get_logger(subsystem="descheduler.taints")


def _owned(change: TaintChange) -> OwnedTaint:
    if change.for_pod:
        return rescue_taint(change.for_pod)
    if change.key == EMPTYING_TAINT_KEY:
        return emptying_taint()
    return out_of_service_taint()


def emptying_nodes(changes: Sequence[TaintChange]) -> list[str]:
    """The nodes a plan empties behind our soft taint (``live.emptying``)."""
    return [c.node for c in changes if c.add and c.key == EMPTYING_TAINT_KEY]


@dataclass
class _Rescue:
    pod: str
    """The add-on, ``namespace/name`` ("" when an adopted entry did not say)."""
    node: str
    owned: OwnedTaint
    deadline: float
    """Monotonic seconds after which the taint goes whatever became of the add-on."""


class RescueTracker:
    """Rescue taints in flight, until the add-on is bound or their time is up: the ones this
    process added, and the ones it adopted from our record."""

    def __init__(self, taints: RecordedTaints, monotonic: Callable[[], float]) -> None:
        self.taints = taints
        self.monotonic = monotonic
        self._rescues: dict[str, _Rescue] = {}
        """By node name."""

    @property
    def pending(self) -> bool:
        return bool(self._rescues)

    def track(self, node: str, pod: str, timeout: float) -> None:
        self._rescues[node] = _Rescue(pod, node, rescue_taint(pod), self.monotonic() + timeout)

    def adopt(self, record: TaintRecord, now: float) -> list[str]:
        """Take over the rescues ``record`` holds that this process does not track, each
        until the end the record gives it (``now``: wall-clock seconds); the nodes."""
        adopted = []
        for node, entry in sorted(record.on_nodes(RESCUE_ANNOTATION).items()):
            if node in self._rescues:
                continue
            left = max(0.0, entry.until - now)
            owned = rescue_taint_valued(entry.value)
            self._rescues[node] = _Rescue(entry.pod, node, owned, self.monotonic() + left)
            adopted.append(node)
        if adopted:
            _log.info("rescues in flight taken over", nodes=adopted)
        return adopted

    async def settle(self, lookup: PodLookup) -> list[str]:
        """Remove the taints whose add-on is bound or gone, or whose time is up; the nodes."""
        due: list[tuple[_Rescue, str]] = []
        for rescue in self._rescues.values():
            pod = lookup(rescue.pod) if rescue.pod else None
            waiting = pod is not None and not pod.node_name
            if waiting and self.monotonic() < rescue.deadline:
                continue
            why = "add-on gone" if pod is None else "timed out" if waiting else "add-on scheduled"
            due.append((rescue, why))
        if not due:
            return []
        removed, failed = await self.taints.remove_all([(r.node, r.owned) for r, _why in due])
        for rescue, why in due:
            if rescue.node in failed:
                error = str(failed[rescue.node])
                _log.warning("rescue taint not removed yet", node=rescue.node, error=error)
                continue
            _log.info("rescue taint removed", node=rescue.node, pod=rescue.pod, why=why)
            del self._rescues[rescue.node]
        return removed


class TaintActions:
    """Applies a plan's taints, and reports the rescues once their evictions are done."""

    def __init__(
        self,
        taints: RecordedTaints,
        tracker: RescueTracker,
        events: EventSink,
        *,
        rescue_timeout: float,
        lookup: PodLookup,
        now: Callable[[], float],
        emptying: EmptyingTracker | None = None,
    ) -> None:
        self.taints = taints
        self.tracker = tracker
        self.emptying = emptying or EmptyingTracker(taints, tracker.monotonic)
        self.events = events
        self.rescue_timeout = rescue_timeout
        self.lookup = lookup
        self.now = now
        """Wall-clock seconds: a rescue's end, as the record keeps it for the next leader."""

    def _entry(self, change: TaintChange) -> tuple[RecordKey, RecordedTaint]:
        owned = _owned(change)
        if not change.for_pod:
            return key_of(change.node, owned), RecordedTaint(owned.value)
        until = self.now() + self.rescue_timeout
        return key_of(change.node, owned), RecordedTaint(owned.value, until, change.for_pod)

    async def _claim(self, changes: Sequence[TaintChange]) -> bool:
        """Record the taints ``changes`` add, before any is added; ``False``: add none."""
        adds = [self._entry(change) for change in changes if change.add]
        try:
            await self.taints.claim(adds)
        except (KubeError, TaintRecordFull) as error:
            _log.warning(
                "taints not recorded, so none is added", taints=len(adds), error=str(error)
            )
            return False
        return True

    async def apply(self, changes: Sequence[TaintChange]) -> set[str]:
        """Apply every change in order; return the nodes whose rescue taint did not land."""
        changes = [
            change
            for change in changes
            # stopping: the emptying taints come off, none goes on
            if not (change.add and change.key == EMPTYING_TAINT_KEY and self.emptying.closed)
        ]
        recorded = await self._claim(changes)
        failed: set[str] = set()
        unused: list[RecordKey] = []
        for change in changes:
            emptying = change.add and change.key == EMPTYING_TAINT_KEY
            if change.add and not recorded:  # ``_claim`` said why
                if change.for_pod:
                    failed.add(change.node)
                continue
            if emptying and self.emptying.closed:  # a stop came while earlier changes went
                unused.append(key_of(change.node, _owned(change)))
                continue
            try:
                if change.add:
                    await self._add(change.node, _owned(change))
                else:
                    _done, errors = await self.taints.remove_all([(change.node, _owned(change))])
                    if errors:
                        raise errors[change.node]
            except KubeError as error:
                _log.warning(
                    "taint not changed",
                    node=change.node,
                    taint=change.taint,
                    add=change.add,
                    error=str(error),
                )
                if change.for_pod:
                    failed.add(change.node)
                continue
            _log.info(
                "taint added" if change.add else "taint removed",
                node=change.node,
                taint=change.taint,
                plugin=change.plugin,
                reason=change.reason,
            )
            if emptying:
                self.emptying.added(change.node)  # at once: a stop now still takes it off
            if change.for_pod:
                self.tracker.track(change.node, change.for_pod, self.rescue_timeout)
            else:
                verb = "added" if change.add else "removed"
                await self.events.emit(
                    ObjectRef.node(change.node),
                    "Normal",
                    change.plugin,
                    f"{verb} taint {change.taint}: {change.reason}",
                )
        await self.taints.forget(unused)
        return failed

    async def _add(self, node: str, owned: OwnedTaint) -> None:
        try:
            await self.taints.add(node, owned)
        except KubeError as error:
            await self.taints.undo(node, owned, error)
            raise

    @staticmethod
    def sendable(evictions: Sequence[PlannedEviction], failed: set[str]) -> list[PlannedEviction]:
        """The evictions to send: none of a rescue whose taint did not land."""
        return [e for e in evictions if not (e.plugin == RESCUE and e.node in failed)]

    async def report(
        self, changes: Sequence[TaintChange], results: Sequence[EvictionResult], failed: set[str]
    ) -> None:
        """Events ``CriticalAddonRescue`` on each rescued add-on and its node."""
        for change in changes:
            if not change.for_pod or not change.add or change.node in failed:
                continue
            mine = [
                r for r in results if r.eviction.plugin == RESCUE and r.eviction.node == change.node
            ]
            evicted = ", ".join(r.eviction.pod for r in mine if r.evicted) or "nothing"
            refused = ", ".join(r.eviction.pod for r in mine if not r.evicted)
            message = (
                f"tainted {change.taint} on node {change.node} and evicted {evicted} to make "
                f"room for critical add-on {change.for_pod}"
            )
            if refused:
                message += f" (not evicted: {refused})"
            namespace, _, name = change.for_pod.partition("/")
            addon = self.lookup(change.for_pod)
            await self.events.emit(
                ObjectRef(
                    kind="Pod",
                    name=name,
                    namespace=namespace,
                    uid=addon.uid if addon is not None else "",
                ),
                "Normal",
                RESCUE,
                message,
            )
            await self.events.emit(ObjectRef.node(change.node), "Normal", RESCUE, message)
