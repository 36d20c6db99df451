"""Taints the descheduler puts on other nodes, and takes off only if it put them there.

The agent owns the taints of its own node by key (``patches.NodePatcher``). The central
descheduler taints nodes that are not its own, with keys that people and other tools use too
(``CriticalAddonsOnly`` marks whole node pools on some platforms; an operator following the
non-graceful shutdown procedure adds ``node.kubernetes.io/out-of-service`` by hand). So
ownership is recorded, not assumed: with each taint we add goes an annotation of ours on the
same node, in the same guarded patch, whose value is the taint's value. We remove a taint only
when our annotation names it, and remove the annotation with it; a taint with the same key
and effect that someone else added is never changed, and we never add ours beside it (the API
server refuses two taints with the same key and effect anyway). The annotation is a mark, not
proof: any node may write its own Node's annotations, so the descheduler asks for a removal
only of a taint its own record on its Lease holds (``agent.descheduler.live.recordedtaints``).

Both writes go through ``NodePatcher``: a ``test`` op on the resourceVersion, a re-read and
rebuild on 409/422, backoff on 429/5xx.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from agent.kube.client import AsyncKube
from agent.kube.errors import KubeError, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.patches import NodePatcher, Op, metadata_map_ops, taints_of
from agent.kubesemantics.taintownership import OwnedTaint


class ForeignTaint(KubeError):
    """The node already has a taint with our key and effect that we did not add."""


def _annotations(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("annotations") or {}


def _same_slot(taint: Mapping[str, Any], owned: OwnedTaint) -> bool:
    return taint.get("key") == owned.key and taint.get("effect") == owned.effect


def add_ops(node: JsonObject, owned: OwnedTaint) -> list[Op]:
    """Add the taint and our annotation; [] when both are there already.

    Raises ``ForeignTaint`` when the node has a taint in the same key/effect slot that our
    annotation does not name: it is someone else's, and it stays as it is.
    """
    current = taints_of(node)
    existing = [taint for taint in current if _same_slot(taint, owned)]
    recorded = _annotations(node).get(owned.annotation)
    if existing:
        if recorded == owned.value and existing[0].get("value") == owned.value:
            return []
        raise ForeignTaint(
            f"node {(node.get('metadata') or {}).get('name')} already has a {owned.key}:"
            f"{owned.effect} taint we did not add"
        )
    wanted = [*current, dict(owned.taint_json)]
    op = "replace" if "taints" in (node.get("spec") or {}) else "add"
    ops: list[Op] = [{"op": op, "path": "/spec/taints", "value": wanted}]
    ops += metadata_map_ops(node, "annotations", set_values={owned.annotation: owned.value})
    return ops


def remove_ops(node: JsonObject, owned: OwnedTaint) -> list[Op]:
    """Remove the taint our annotation names, and the annotation; [] when it is not ours.

    ``owned.value`` is ignored: the annotation says which value we added.
    """
    recorded = _annotations(node).get(owned.annotation)
    if recorded is None:
        return []
    current = taints_of(node)
    wanted = [
        taint
        for taint in current
        if not (_same_slot(taint, owned) and str(taint.get("value") or "") == recorded)
    ]
    ops: list[Op] = []
    if wanted != current:
        ops.append({"op": "replace", "path": "/spec/taints", "value": wanted})
    ops += metadata_map_ops(node, "annotations", remove=(owned.annotation,))
    return ops


class OwnedTaints:
    """Adds and removes our taints on any node, guarded, retried, ownership recorded."""

    def __init__(
        self,
        kube: AsyncKube,
        *,
        attempts: int = 8,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.attempts = attempts
        self.monotonic = monotonic

    def _patcher(self, node_name: str, owned: OwnedTaint) -> NodePatcher:
        keys = {owned.key, owned.annotation}
        return NodePatcher(
            self.kube,
            node_name,
            keys.__contains__,
            attempts=self.attempts,
            monotonic=self.monotonic,
        )

    async def add(self, node_name: str, owned: OwnedTaint) -> JsonObject:
        """Taint the node (and record it); raises ``ForeignTaint``, ``NotFound``, ``KubeError``."""
        return await self._patcher(node_name, owned).update(
            lambda node: add_ops(node, owned), what=f"add taint {owned.key}"
        )

    async def remove(self, node_name: str, owned: OwnedTaint) -> bool:
        """Remove our taint if our annotation records it; ``False`` when the node is gone."""
        try:
            await self._patcher(node_name, owned).update(
                lambda node: remove_ops(node, owned), what=f"remove taint {owned.key}"
            )
        except NotFound:
            return False
        return True
