"""The descheduler's own record of the taints it has put on nodes: the only evidence it acts on.

Why a record of its own: every taint the descheduler adds goes with an annotation of ours on
the same node (``agent.kube.ownedtaints``), but any node may write its own Node's
annotations, so such an annotation proves nothing about who wrote it. One annotation on one
node once switched the critical add-on rescue off for the whole cluster. What a rescue, an
out-of-service taint or an emptying taint in flight is, the descheduler now learns from this
record, which lives on its own Lease (written only by the descheduler's identity; no agent
may touch it), never from a node's mark. A node's annotation still says that our patch
landed there, so a taint is removed only where both agree.

Order, and why it makes the record trustworthy: an entry is written before its taint is
added, and dropped only after its taint is removed (``live.recordedtaints``). So a taint of
ours is never on a node without its entry, and an entry whose taint is absent (an add that
failed or never ran) costs nothing but a removal that finds nothing to remove.

Pure data: the wire form on the Lease is ``cache.taintrecord``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

_EMPTY: Mapping[str, Mapping[str, RecordedTaint]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RecordedTaint:
    """One taint of ours on one node, as the record holds it."""

    value: str
    """The taint's value (and the value of our annotation beside it on the node)."""
    until: float = 0.0
    """A rescue's end: wall-clock Unix seconds after which its taint goes whatever became of
    the add-on (0: no end of its own)."""
    pod: str = ""
    """A rescue's add-on, ``namespace/name`` (the taint's value may be a shortened form)."""


class RecordKey(NamedTuple):
    """Which entry: our node annotation's key (it names the kind of taint), and the node."""

    annotation: str
    node: str


class Mark(NamedTuple):
    """One of our annotations as a node carries it."""

    node: str
    annotation: str
    value: str


@dataclass(frozen=True)
class TaintRecord:
    """Our taints on nodes: annotation key -> node name -> entry."""

    entries: Mapping[str, Mapping[str, RecordedTaint]] = field(default_factory=lambda: _EMPTY)

    def get(self, annotation: str, node: str) -> RecordedTaint | None:
        return self.entries.get(annotation, {}).get(node)

    def on_nodes(self, annotation: str) -> Mapping[str, RecordedTaint]:
        """Node -> entry, for one kind of taint."""
        return self.entries.get(annotation, {})

    def __len__(self) -> int:
        return sum(len(by_node) for by_node in self.entries.values())

    def with_entries(self, added: Iterable[tuple[RecordKey, RecordedTaint]]) -> TaintRecord:
        """The record with ``added`` set (an entry for the same key is replaced)."""
        entries = {annotation: dict(by_node) for annotation, by_node in self.entries.items()}
        for key, entry in added:
            entries.setdefault(key.annotation, {})[key.node] = entry
        return TaintRecord(entries)

    def without(self, dropped: Iterable[RecordKey]) -> TaintRecord:
        """The record with the ``dropped`` entries gone (absent ones are ignored)."""
        entries = {annotation: dict(by_node) for annotation, by_node in self.entries.items()}
        for key in dropped:
            entries.get(key.annotation, {}).pop(key.node, None)
        return TaintRecord({a: by_node for a, by_node in entries.items() if by_node})


def unrecorded_marks(
    record: TaintRecord,
    annotations_by_node: Iterable[tuple[str, Mapping[str, str]]],
    keys: Iterable[str],
) -> list[Mark]:
    """Our annotations (``keys``) on nodes that the record does not name with the same value:
    written by someone else (or by a version of ours before the record), so ignored."""
    wanted = sorted(keys)
    marks = []
    for node, marked in annotations_by_node:
        for annotation in wanted:
            value = marked.get(annotation)
            if value is None:
                continue
            entry = record.get(annotation, node)
            if entry is None or entry.value != value:
                marks.append(Mark(node, annotation, value))
    return sorted(marks)
