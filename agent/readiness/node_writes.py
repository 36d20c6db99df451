"""The JSON-patch builders for the gate's three writes to our Node.

``NodePatcher`` calls a builder with the freshest Node it has, and again after every
conflict, so each builder recomputes from what it is given: removing the gate taint keeps
every other taint in that Node, including one added a moment before. Lifting and recording
completion go in one patch, so the Node never shows one without the other.
"""

from __future__ import annotations

from agent.kube.jsontypes import JsonObject
from agent.kube.patches import Builder, Op, Taint, metadata_map_ops, taint_ops
from agent.kubesemantics.timestamps import parse_rfc3339
from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION, GATE_TAINT_EFFECT


def parse_time(text: str) -> float | None:
    """An API timestamp in Unix seconds, or ``None`` when it cannot be read."""
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


def is_completed(node: JsonObject) -> bool:
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return BOOTSTRAP_COMPLETED_ANNOTATION in annotations


def _mark(node: JsonObject, completed_at: str) -> list[Op]:
    if is_completed(node):
        return []
    return metadata_map_ops(
        node, "annotations", set_values={BOOTSTRAP_COMPLETED_ANNOTATION: completed_at}
    )


def lift(taint_key: str, completed_at: str) -> Builder:
    """Drop every taint keyed ``taint_key``; record completion unless already recorded."""

    def build(node: JsonObject) -> list[Op]:
        removal = taint_ops(node, remove=taint_key)
        if not removal:
            return []  # someone lifted it already; nothing of ours to record either
        return removal + _mark(node, completed_at)

    return build


def mark_completed(completed_at: str) -> Builder:
    def build(node: JsonObject) -> list[Op]:
        return _mark(node, completed_at)

    return build


def add(taint_key: str) -> Builder:
    def build(node: JsonObject) -> list[Op]:
        return taint_ops(node, ensure=Taint(taint_key, GATE_TAINT_EFFECT))

    return build
