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
from typing import Protocol

import structlog

from agent.clock import Clock
from agent.kube.leaderelection import LeaderElector
from agent.kube.lease import KubeLeaseApi
from agent.kube.leaseannotations import LeaderAnnotations, LeaseAnnotations

RECENT_EVICTIONS_ANNOTATION = "kubelet-companion.io/recent-evictions"
DEFAULT_MAX_ENTRIES = 3000
_log = structlog.get_logger(subsystem="kube.evictionmemory")


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


class RecentEvictionsMemory:
    """``load()`` and ``save()`` of the churn guard's map, as the leader's annotation."""

    def __init__(
        self,
        elector: LeaderElector,
        *,
        clock: Clock,
        max_age: float,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self.elector = elector
        self.annotations = LeaderAnnotations(elector)
        self.clock = clock
        self.max_age = max_age
        self.max_entries = max_entries

    async def load(self) -> dict[str, float]:
        """The remembered map, read afresh from the Lease and trimmed."""
        text = await self.annotations.read(RECENT_EVICTIONS_ANNOTATION)
        return self._trim(decode_recent_evictions(text))

    async def save(self, evicted_at: Mapping[str, float]) -> None:
        """Trim and write the map, as leader; nothing is sent when it did not change.

        Raises ``LeadershipLost`` when we are not (or no longer) the holder.
        """
        encoded = encode_recent_evictions(self._trim(evicted_at))
        current = self.annotations.cached(RECENT_EVICTIONS_ANNOTATION)
        if current == encoded:
            self.elector.check()
            return
        await self.annotations.write(RECENT_EVICTIONS_ANNOTATION, encoded)

    def _trim(self, evicted_at: Mapping[str, float]) -> dict[str, float]:
        trimmed = trim_recent_evictions(
            evicted_at, now=self.clock.now(), max_age=self.max_age, max_entries=self.max_entries
        )
        if len(trimmed) < len(evicted_at):
            _log.debug("recent evictions trimmed", before=len(evicted_at), after=len(trimmed))
        return trimmed


class LeaseAnnotationMemory:
    """The same map on the same Lease's annotation, for a descheduler without leader election.

    A Job or CronJob runs one cycle per process, so a memory kept in the process would
    forget every eviction before the next run. Without an elector there is no holder to
    write through: each save is one of ``LeaseAnnotations``' guarded read-change-writes.
    """

    def __init__(
        self,
        lease_api: KubeLeaseApi,
        *,
        clock: Clock,
        max_age: float,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self.annotations = LeaseAnnotations(lease_api)
        self.clock = clock
        self.max_age = max_age
        self.max_entries = max_entries

    async def load(self) -> dict[str, float]:
        text = await self.annotations.read(RECENT_EVICTIONS_ANNOTATION)
        return self._trim(decode_recent_evictions(text))

    async def save(self, evicted_at: Mapping[str, float]) -> None:
        encoded = encode_recent_evictions(self._trim(evicted_at))
        await self.annotations.update(RECENT_EVICTIONS_ANNOTATION, lambda _current: encoded)

    def _trim(self, evicted_at: Mapping[str, float]) -> dict[str, float]:
        return trim_recent_evictions(
            evicted_at, now=self.clock.now(), max_age=self.max_age, max_entries=self.max_entries
        )
