"""The shapes the API server enforces on the sub-objects the projection keeps as sent.

Affinity, tolerations, taints, topology spread constraints and label selectors are small and
rare enough to keep as the API sent them (``PodInfo.affinity`` is a dict), and the matching
rules in ``agent.kube`` read them as dicts. The API server never stores one of the wrong
shape, but a snapshot file can hold anything: a ``true`` where an affinity belongs would
reach a rule's ``.get`` in the middle of a cycle. So each is checked once, where it enters,
against the types the API server validates (only the fields some rule reads; others pass),
and a misfit is a ``ProjectionError`` at its path: exit 2 offline, a skipped object live.

Nesting is bounded too (``MAX_NESTING``), unknown fields included, before anything walks a
value recursively.
"""

from __future__ import annotations

from typing import Any

import msgspec


class _Shape(msgspec.Struct, rename="camel"):
    """camelCase on the wire; unknown fields pass (newer API fields are no error)."""


class LabelSelectorRequirement(_Shape):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(_Shape):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class NodeSelectorRequirement(_Shape):
    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(_Shape):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(_Shape):
    node_selector_terms: list[NodeSelectorTerm] | None = None


class PreferredSchedulingTerm(_Shape):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(_Shape):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class PodAffinityTerm(_Shape):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(_Shape):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Shape):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        None
    )


class Affinity(_Shape):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(_Shape):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Taint(_Shape):
    key: str
    effect: str
    value: str | None = None
    time_added: str | None = None


class TopologySpreadConstraint(_Shape):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


AFFINITY: Any = Affinity | None
TOLERATIONS: Any = list[Toleration] | None
TAINTS: Any = list[Taint] | None
SPREAD: Any = list[TopologySpreadConstraint] | None
SELECTOR: Any = LabelSelector | None
STRING_MAP: Any = dict[str, str] | None


MAX_NESTING = 32
"""Kubernetes' own sub-objects nest under ten levels; deeper is refused, unknown fields
included (they pass the shape, and are kept)."""


def _too_deep(value: Any) -> bool:
    pending = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        if depth > MAX_NESTING:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def misfit(value: Any, shape: Any) -> tuple[str, str] | None:
    """``(path within value, reason)`` when ``value`` is not of ``shape``, else ``None``."""
    if _too_deep(value):
        return "", f"nested deeper than {MAX_NESTING} levels"
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as error:
        reason, _, where = str(error).partition(" - at `$")
        return where.rstrip("`"), reason
    except RecursionError:
        return "", "nested too deep"
    return None
