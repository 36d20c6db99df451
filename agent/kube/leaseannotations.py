"""Our annotations on the descheduler's Lease: read, and changed by guarded writes.

Why on the Lease: it is the one object only the descheduler writes (its Role names it; no
agent may touch it), so what it keeps there survives a restart and a leader change, and no
node can forge it: the churn guard's memory (``agent.kube.evictionmemory``) and the record
of our taints on nodes (``agent.descheduler.live.recordedtaints``).

Two ways to write, one ``AnnotationStore``:

- ``LeaderAnnotations``, with leader election: every write is one of the elector's guarded
  renews (``LeaderElector.renew_with``), so it needs leadership, carries a fresh renewTime,
  and a deposed leader can never overwrite its successor's annotations.
- ``LeaseAnnotations``, without it (a Job or CronJob runs one cycle per process, so what
  it kept in the process would be forgotten by the next run): there is no holder to write
  through, so each write reads the Lease (creating it, holderless, when absent), changes the
  annotation and writes it back guarded by the resourceVersion it read; a 409 means someone
  wrote meanwhile, and the write starts again from a fresh read.

Only keys under ``kubelet-companion.io/`` are ours to write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agent.kube.errors import Conflict, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.leaderelection import LeaderElector
from agent.kube.lease import LeaseApi, lease_object

OWNED_ANNOTATION_PREFIX = "kubelet-companion.io/"

Change = Callable[[str | None], str | None]
"""The annotation's current value (``None``: absent) -> its new one (``None``: remove it).
It may raise, and then nothing is written."""


def annotation_of(lease: JsonObject | None, key: str) -> str | None:
    """``key``'s annotation on ``lease`` (``None`` when absent, or not a string)."""
    annotations = ((lease or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(key)
    return value if isinstance(value, str) else None


def _check_ours(key: str) -> None:
    if not key.startswith(OWNED_ANNOTATION_PREFIX):
        raise ValueError(f"annotation {key!r} is not ours ({OWNED_ANNOTATION_PREFIX}*)")


def _set(lease: JsonObject, key: str, value: str | None) -> None:
    """Set (or, for ``None``, remove) one annotation of ``lease`` in place."""
    metadata = lease.setdefault("metadata", {})
    annotations = dict(metadata.get("annotations") or {})
    if value is None:
        annotations.pop(key, None)
    else:
        annotations[key] = value
    metadata["annotations"] = annotations


class AnnotationStore(Protocol):
    """One Lease's annotations of ours, however its writes are guarded."""

    async def read(self, key: str) -> str | None:
        """``key``'s annotation, read afresh (``None`` when absent, or no Lease)."""

    async def update(self, key: str, change: Change) -> str | None:
        """Apply ``change`` to ``key``'s current annotation and write the result, guarded;
        return what the Lease now holds. Raises ``KubeError`` (``LeadershipLost`` when a
        leader's write finds it no longer leads)."""


class LeaderAnnotations:
    """Our annotations on the Lease ``elector`` campaigns for."""

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector

    def cached(self, key: str) -> str | None:
        """``key``'s annotation on the last Lease object the elector read or wrote."""
        return annotation_of(self.elector.lease, key)

    async def read(self, key: str) -> str | None:
        """Read the Lease afresh and return ``key``'s annotation (None when absent)."""
        return annotation_of(await self.elector.refresh(), key)

    async def write(self, key: str, value: str) -> None:
        """Set one of our annotations on the Lease, as leader, guarded by resourceVersion.

        Raises ``LeadershipLost`` when we are not (or no longer) the holder.
        """
        await self.update(key, lambda _current: value)

    async def update(self, key: str, change: Change) -> str | None:
        """``change`` made to the annotation the Lease holds, as leader, in a guarded renew.

        As leader the elector's last Lease is the current one (only the holder writes it; a
        409 makes the elector read it again and ``change`` runs on the fresh one). A change
        that leaves the value as it is still checks leadership, and writes nothing.
        """
        _check_ours(key)
        current = self.cached(key)
        if change(current) == current:
            self.elector.check()
            return current
        written: list[str | None] = []

        def annotate(lease: JsonObject) -> None:
            value = change(annotation_of(lease, key))
            _set(lease, key, value)
            written.append(value)

        await self.elector.renew_with(annotate)
        return written[-1]


class LeaseAnnotations:
    """Our annotations on one Lease, for a descheduler without leader election."""

    ATTEMPTS = 5

    def __init__(self, lease_api: LeaseApi) -> None:
        self.lease_api = lease_api

    async def read(self, key: str) -> str | None:
        try:
            return annotation_of(await self.lease_api.get(), key)
        except NotFound:
            return None

    async def update(self, key: str, change: Change) -> str | None:
        _check_ours(key)
        for _attempt in range(self.ATTEMPTS):
            try:
                lease = await self.lease_api.get()
            except NotFound:
                lease = None
            current = annotation_of(lease, key)
            value = change(current)
            if value == current:
                return current
            if lease is None:
                lease = await self._create()
                if lease is None:
                    continue  # created by someone else meanwhile: read theirs
            _set(lease, key, value)
            try:
                await self.lease_api.replace(lease)  # carries the resourceVersion just read
            except Conflict:
                continue
            return value
        raise Conflict(f"the Lease {self.lease_api.name} kept changing under us")

    async def _create(self) -> JsonObject | None:
        """A new Lease nobody holds; ``None`` when someone else created one first."""
        try:
            return await self.lease_api.create(lease_object(self.lease_api.name, {}))
        except Conflict:
            return None
