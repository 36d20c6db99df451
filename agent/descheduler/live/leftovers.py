"""Sweeping the taints of ours that an earlier run left behind.

Each taint we add to a node goes with our annotation, whose value is the taint's value
(``agent.kube.ownedtaints``), so a node's annotations say which of ours it still carries after
a run that was killed or timed out before it could take them off. The first cycle a process
leads sweeps them, rescue and emptying taints alike; the ones this process tracks itself are
left to their own tracker.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable

import structlog

from agent.descheduler.model.cluster import NodeInfo
from agent.kube.errors import KubeError
from agent.kube.ownedtaints import OwnedTaints
from agent.kube.taintownership import OwnedTaint

_log = structlog.get_logger(subsystem="descheduler.taints")


async def remove_leftovers(
    taints: OwnedTaints,
    nodes: Iterable[NodeInfo],
    *,
    annotation: str,
    owned: Callable[[str], OwnedTaint],
    tracked: Container[str],
    what: str,
) -> list[str]:
    """Remove the taint ``annotation`` names on each node (``owned`` makes it from the
    annotation's value), except on the ``tracked`` nodes; the nodes it came off."""
    removed = []
    for node in nodes:
        value = node.annotations.get(annotation)
        if value is None or node.name in tracked:
            continue
        try:
            await taints.remove(node.name, owned(value))
        except KubeError as error:
            _log.warning(f"leftover {what} taint not removed", node=node.name, error=str(error))
            continue
        _log.info(f"leftover {what} taint removed", node=node.name, taint_value=value)
        removed.append(node.name)
    return removed
