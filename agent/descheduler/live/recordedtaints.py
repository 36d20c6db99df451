"""Our taints on nodes, kept in step with our own record of them on the Lease.

The record (``model.taintrecord``, on the Lease as ``cache.taintrecord`` writes it) is what
the descheduler trusts; a node's annotation only says where our patch landed. The order that
keeps the record a superset of our taints in place:

- ``claim`` writes the entries before their taints are added (one Lease write for all of a
  plan's taints). When it fails (leadership lost, the API server down, the record full) no
  taint is added.
- ``remove_all`` takes taints off and only then drops their entries (one Lease write for
  all of them). An add that failed is undone the same way (``undo``): its taint is taken
  off in case it landed after all (a timeout may hide a patch that was applied), then its
  entry goes; a ``ForeignTaint`` (someone else's taint in the slot) added nothing, so its
  entry just goes.

A write that drops entries may fail after their taints are gone (a deposed leader, say): an
entry whose taint is absent costs only a removal that finds nothing to remove, and the next
leader's sweep drops it (``leftovers``).

``released`` remembers the marks this process took off until the node cache shows them
gone, so a cache that lags a moment is not taken for a node forging our marks
(``taintmarks``).

Concurrency: everything runs on the event loop; each write is one guarded Lease write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from agent.descheduler.cache.taintrecord import (
    MAX_RECORD_BYTES,
    TAINT_RECORD_ANNOTATION,
    UnreadableRecord,
    decode_record,
    encode_record,
)
from agent.descheduler.model.taintrecord import RecordedTaint, RecordKey, TaintRecord
from agent.kube.errors import KubeError
from agent.kube.leaseannotations import AnnotationStore
from agent.kube.ownedtaints import ForeignTaint, OwnedTaints
from agent.kubesemantics.taintownership import OwnedTaint

_log = structlog.get_logger(subsystem="descheduler.taints")


class TaintRecordFull(Exception):
    """The record would grow past ``MAX_RECORD_BYTES``: the taints are not added."""


def key_of(node: str, owned: OwnedTaint) -> RecordKey:
    return RecordKey(owned.annotation, node)


class RecordedTaints:
    """Adds and removes our taints (``OwnedTaints``) with our record of them kept in step."""

    def __init__(
        self,
        taints: OwnedTaints,
        annotations: AnnotationStore,
        *,
        max_bytes: int = MAX_RECORD_BYTES,
    ) -> None:
        self.taints = taints
        self.annotations = annotations
        self.max_bytes = max_bytes
        self.record = TaintRecord()
        """The record as this process last read or wrote it."""
        self.released: dict[RecordKey, str] = {}
        """Marks taken off by this process (their value) that the node cache may still show."""

    async def load(self) -> TaintRecord:
        """The record, read afresh. Raises ``KubeError``; unreadable text counts as empty."""
        self.record = _decoded(await self.annotations.read(TAINT_RECORD_ANNOTATION))
        return self.record

    async def claim(self, claims: Sequence[tuple[RecordKey, RecordedTaint]]) -> None:
        """Record these taints as ours, before they are added.

        Raises ``KubeError`` (``LeadershipLost``) or ``TaintRecordFull``; then nothing is
        recorded, and none of them may be added.
        """
        if claims:
            await self._update(lambda record: record.with_entries(claims))

    async def add(self, node: str, owned: OwnedTaint) -> None:
        """Add a claimed taint; raises ``ForeignTaint``, ``KubeError`` (then ``undo`` it)."""
        await self.taints.add(node, owned)

    async def undo(self, node: str, owned: OwnedTaint, error: KubeError) -> None:
        """After an add that failed with ``error``: no taint of ours left, no entry left."""
        if isinstance(error, ForeignTaint):
            await self.forget([key_of(node, owned)])
        else:
            await self.remove_all([(node, owned)])

    async def remove_all(
        self, taints: Sequence[tuple[str, OwnedTaint]]
    ) -> tuple[list[str], dict[str, KubeError]]:
        """Take each (node, taint) off where our annotation names it, then drop the entries
        of those that came off (or whose node is gone); the nodes done, and the failures."""
        done: list[tuple[str, OwnedTaint]] = []
        failed: dict[str, KubeError] = {}
        for node, owned in taints:
            try:
                await self.taints.remove(node, owned)
            except KubeError as error:
                failed[node] = error
                continue
            done.append((node, owned))
            self.released[key_of(node, owned)] = owned.value
        await self.forget([key_of(node, owned) for node, owned in done])
        return [node for node, _owned in done], failed

    async def forget(self, keys: Sequence[RecordKey]) -> None:
        """Drop entries whose taints are gone (or were never added); a failed write is only
        logged (see above)."""
        if not keys:
            return
        try:
            await self._update(lambda record: record.without(keys))
        except KubeError as error:
            _log.warning(
                "taint record not updated; the next sweep drops its stale entries",
                entries=len(keys),
                error=str(error),
            )

    async def _update(self, change: Callable[[TaintRecord], TaintRecord]) -> None:
        def rewrite(text: str | None) -> str | None:
            encoded = encode_record(change(_decoded(text)))
            if encoded is not None and len(encoded.encode()) > self.max_bytes:
                raise TaintRecordFull(
                    f"the taint record would exceed {self.max_bytes} bytes on the Lease"
                )
            return encoded

        written = await self.annotations.update(TAINT_RECORD_ANNOTATION, rewrite)
        self.record = _decoded(written)


def _decoded(text: str | None) -> TaintRecord:
    try:
        return decode_record(text)
    except UnreadableRecord as error:
        # Only an administrator could have written it (no agent may touch the Lease). Counted
        # as empty: its taints are then not ours to touch, and the next write replaces it.
        _log.error("taint record on the Lease is unreadable; taken as empty", error=str(error))
        return TaintRecord()
