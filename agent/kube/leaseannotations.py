"""Our annotations on the leader's Lease, read and written through its elector.

Why on the Lease: it is the one object only the leader writes, so what the leader keeps
there (the churn guard's memory, ``agent.kube.evictionmemory``, the one user) survives a
restart and a leader change. Why through the elector: every write is one of its guarded
renews (``LeaderElector.renew_with``), so it needs leadership, carries a fresh renewTime,
and a deposed leader can never overwrite its successor's annotations. Only keys under
``kubelet-companion.io/`` are ours to write.
"""

from __future__ import annotations

from agent.kube.jsontypes import JsonObject
from agent.kube.leaderelection import LeaderElector

OWNED_ANNOTATION_PREFIX = "kubelet-companion.io/"


def annotation_of(lease: JsonObject | None, key: str) -> str | None:
    """``key``'s annotation on ``lease`` (``None`` when absent, or not a string)."""
    annotations = ((lease or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(key)
    return value if isinstance(value, str) else None


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
        if not key.startswith(OWNED_ANNOTATION_PREFIX):
            raise ValueError(f"annotation {key!r} is not ours ({OWNED_ANNOTATION_PREFIX}*)")

        def annotate(lease: JsonObject) -> None:
            metadata = lease.setdefault("metadata", {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), key: value}

        await self.elector.renew_with(annotate)
