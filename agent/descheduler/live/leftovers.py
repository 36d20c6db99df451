"""Sweeping the taints of ours that an earlier run left behind, as our record names them.

A run killed or timed out before it could take its taints off left them on the nodes, and
their entries in our record on the Lease (``recordedtaints``). The first cycle a process
leads (at start, and at each new leadership) takes over: rescue taints are adopted by the
rescue tracker with the end the record gives them (``RescueTracker.adopt``), out-of-service
taints are NodeShutdownRecovery's to take off once their node is Ready (the record tells it
they are ours), and emptying taints are swept here: their replacements' bookkeeping died
with the run, and the taint is a steer only.

Only the record says a taint is ours: a node's annotation alone (any node may write its own
Node's) is never swept. A swept taint comes off only where the node's annotation names it
too (``ownedtaints.remove_ops``), so a taint someone else put in the same slot stays. The
ones this process tracks itself are left to their own tracker.
"""

from __future__ import annotations

from collections.abc import Container

import structlog

from agent.descheduler.live.recordedtaints import RecordedTaints
from agent.descheduler.model.taintrecord import TaintRecord
from agent.kubesemantics.taintownership import owned_taint_for

_log = structlog.get_logger(subsystem="descheduler.taints")


async def remove_leftovers(
    taints: RecordedTaints,
    record: TaintRecord,
    *,
    annotation: str,
    tracked: Container[str],
    what: str,
) -> list[str]:
    """Remove the taints of the kind ``annotation`` names that ``record`` holds, except on
    the ``tracked`` nodes; the nodes they came off."""
    leftovers = [
        (node, owned_taint_for(annotation, entry.value))
        for node, entry in sorted(record.on_nodes(annotation).items())
        if node not in tracked
    ]
    removed, failed = await taints.remove_all(leftovers)
    for node, error in failed.items():
        _log.warning(f"leftover {what} taint not removed", node=node, error=str(error))
    if removed:
        _log.info(f"leftover {what} taints removed", nodes=len(removed), sample=removed[:5])
    return removed
