"""The churn guard's memory: which owners lost a pod to us, and when, kept on the Lease.

Why on the Lease: the memory must survive a restart and a leader change (upstream #424,
#994), and the Lease is the one object only the leader writes. It is an annotation
(``kubelet-companion.io/recent-evictions``) holding a compact JSON map owner UID -> Unix
seconds. The new leader reads it right after it acquires the Lease (the acquiring write
keeps the previous leader's annotations), and every write is a guarded renew by the
elector (``agent.kube.leaseannotations``), so a deposed leader can never overwrite its
successor's memory.

An annotation is bounded (all of an object's annotations share 256 KiB), so the map is
trimmed before every write: entries older than the longest cooldown go, and beyond
``max_entries`` the oldest go (about 50 bytes each; 3000 entries stay under 150 KiB).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Generic, Protocol, TypeVar

import structlog

from agent.clock import Clock
from agent.kube.leaderelection import LeaderElector
from agent.kube.lease import KubeLeaseApi
from agent.kube.leaseannotations import AnnotationStore, LeaderAnnotations, LeaseAnnotations

RECENT_EVICTIONS_ANNOTATION = "kubelet-companion.io/recent-evictions"
DEFAULT_MAX_ENTRIES = 3000
_log = structlog.get_logger(subsystem="kube.evictionmemory")
S = TypeVar("S")


def trim_recent_evictions(
    evicted_at: Mapping[str, float], *, now: float, max_age: float, max_entries: int
) -> dict[str, float]:
    """Keep entries younger than ``max_age`` at ``now``; of those, the newest ``max_entries``.

    Times are floored to whole seconds (the stored form). Non-finite times are dropped.
    Ties at the size bound keep the smaller UID, so the result does not depend on order.
    """
    oldest = now - max_age
    fresh = {
        uid: float(math.floor(when))
        for uid, when in evicted_at.items()
        if math.isfinite(when) and when >= oldest
    }
    if len(fresh) <= max_entries:
        return fresh
    newest = sorted(fresh.items(), key=lambda item: (-item[1], item[0]))[: max(0, max_entries)]
    return dict(newest)


def encode_recent_evictions(evicted_at: Mapping[str, float]) -> str:
    """Compact, sorted JSON with integer seconds: ``{"uid-a":1767225600,...}``."""
    return json.dumps(
        {uid: int(when) for uid, when in sorted(evicted_at.items())}, separators=(",", ":")
    )


def decode_recent_evictions(text: str | None) -> dict[str, float]:
    """The map from the annotation; anything unreadable counts as no memory (and is logged):
    losing the guard's memory only means one cooldown is not honoured, never a crash."""
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except ValueError:
        _log.warning("recent-evictions annotation is not JSON; starting empty")
        return {}
    if not isinstance(raw, dict):
        _log.warning("recent-evictions annotation is not a JSON object; starting empty")
        return {}
    return {
        str(uid): float(when)
        for uid, when in raw.items()
        if isinstance(when, int | float) and not isinstance(when, bool)
    }


class EvictionsMemory(Protocol):
    """Where the churn guard's map lives between cycles (and processes)."""

    async def load(self) -> dict[str, float]: ...

    async def save(self, evicted_at: Mapping[str, float]) -> None: ...


class _AnnotationMemory(Generic[S]):
    """The map in one Lease annotation: read afresh and trimmed on load, trimmed and written
    on save through the store's guarded update (which writes nothing when the value stays, and
    raises ``LeadershipLost`` for a leader that no longer leads). What differs between the
    memories is the store ``_store`` builds from ``source``."""

    def __init__(
        self,
        source: S,
        *,
        clock: Clock,
        max_age: float,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self.annotations = self._store(source)
        self.clock = clock
        self.max_age = max_age
        self.max_entries = max_entries

    @staticmethod
    def _store(source: S) -> AnnotationStore:
        raise NotImplementedError

    async def load(self) -> dict[str, float]:
        """The remembered map, read afresh from the Lease and trimmed."""
        text = await self.annotations.read(RECENT_EVICTIONS_ANNOTATION)
        return self._trim(decode_recent_evictions(text))

    async def save(self, evicted_at: Mapping[str, float]) -> None:
        """Trim and write the map; nothing is written when it did not change."""
        encoded = encode_recent_evictions(self._trim(evicted_at))
        await self.annotations.update(RECENT_EVICTIONS_ANNOTATION, lambda _current: encoded)

    def _trim(self, evicted_at: Mapping[str, float]) -> dict[str, float]:
        return trim_recent_evictions(
            evicted_at, now=self.clock.now(), max_age=self.max_age, max_entries=self.max_entries
        )


class RecentEvictionsMemory(_AnnotationMemory[LeaderElector]):
    """``load()`` and ``save()`` of the churn guard's map, as the leader's annotation (a save
    raises ``LeadershipLost`` when we are not, or no longer, the holder)."""

    @staticmethod
    def _store(source: LeaderElector) -> AnnotationStore:
        return LeaderAnnotations(source)

    def _trim(self, evicted_at: Mapping[str, float]) -> dict[str, float]:
        trimmed = super()._trim(evicted_at)
        if len(trimmed) < len(evicted_at):
            _log.debug("recent evictions trimmed", before=len(evicted_at), after=len(trimmed))
        return trimmed


class LeaseAnnotationMemory(_AnnotationMemory[KubeLeaseApi]):
    """The same map on the same Lease's annotation, for a descheduler without leader election.

    A Job or CronJob runs one cycle per process, so a memory kept in the process would
    forget every eviction before the next run. Without an elector there is no holder to
    write through: each save is one of ``LeaseAnnotations``' guarded read-change-writes.
    """

    @staticmethod
    def _store(source: KubeLeaseApi) -> AnnotationStore:
        return LeaseAnnotations(source)
