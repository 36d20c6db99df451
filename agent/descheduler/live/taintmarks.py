"""Our marks on nodes that our record does not vouch for: ignored, logged once, counted.

Any node may write its own Node's annotations, so one of ours on a node that our record on
the Lease does not name (``model.taintrecord``) was written by someone else: an agent forging
a rescue in flight, say, to keep the descheduler away. It decides nothing (the plugins read
the record, never the mark) and its taint is never removed for it; an operator should know,
as for a NodeReport the descheduler does not believe:

- each such mark is logged once, as a warning naming the node, when it is first seen (again
  after it went away), not every cycle;
- ``kubelet_companion_descheduler_unrecorded_taint_marks{annotation}`` says how many there
  are now.

A mark left by a version of ours from before the record looks the same; its taint is then
ours to remove by hand (docs/descheduler.md says how). A mark this process itself just took
off (``RecordedTaints.released``) is not counted until the node cache has caught up with it.

Concurrency: runs on the event loop, once per cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

import structlog
from prometheus_client import Gauge

from agent.descheduler.model.cluster import NodeInfo
from agent.descheduler.model.taintrecord import Mark, RecordKey, TaintRecord, unrecorded_marks
from agent.kubesemantics.taintownership import OWNED_ANNOTATIONS

_log = structlog.get_logger(subsystem="descheduler.taints")


class UnrecordedMarks:
    """Judges each cycle's nodes against the record; says what it ignores, once."""

    def __init__(self, gauge: Gauge | None = None) -> None:
        self.gauge = gauge
        self._said: set[Mark] = set()

    def check(
        self,
        nodes: Mapping[str, NodeInfo],
        record: TaintRecord,
        released: MutableMapping[RecordKey, str],
    ) -> list[Mark]:
        """The marks ``record`` does not vouch for on ``nodes``; ``released`` loses the marks
        the cache now shows gone."""
        for key, value in list(released.items()):
            node = nodes.get(key.node)
            if node is None or node.annotations.get(key.annotation) != value:
                del released[key]
        marks = [
            mark
            for mark in unrecorded_marks(
                record,
                ((node.name, node.annotations) for node in nodes.values() if node.annotations),
                OWNED_ANNOTATIONS,
            )
            if released.get(RecordKey(mark.annotation, mark.node)) != mark.value
        ]
        for mark in marks:
            if mark not in self._said:
                _log.warning(
                    "node carries a taint mark of ours that our record does not hold; ignored",
                    node=mark.node,
                    annotation=mark.annotation,
                    value=mark.value,
                )
        self._said = set(marks)
        if self.gauge is not None:
            for annotation in sorted(OWNED_ANNOTATIONS):
                count = sum(1 for mark in marks if mark.annotation == annotation)
                self.gauge.labels(annotation).set(count)
        return marks
