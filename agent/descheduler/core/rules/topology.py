"""Topology spread constraints on the model: parsed once, then counted per domain.

Shared by RemovePodsViolatingTopologySpreadConstraint and the offline plan's placement, so
both read a pod's constraints the same way.

Follows upstream's ``newTopologySpreadConstraint`` and ``matchNodeInclusionPolicies`` (which
mirror kube-scheduler's ``podtopologyspread/common.go``):

- the ``labelSelector`` is ``metav1.LabelSelector`` (absent selects no pod); ``matchLabelKeys``
  adds ``key in (value)`` for each listed key the owning pod carries;
- ``nodeAffinityPolicy`` defaults to ``Honor``: only nodes matching the owning pod's
  nodeSelector and required node affinity form domains; ``nodeTaintsPolicy`` defaults to
  ``Ignore``; with ``Honor``, nodes with a NoSchedule/NoExecute taint the pod does not
  tolerate are left out;
- a domain is a value of ``topologyKey`` on an included node; a pod counts in the domain of
  its node when it is in the constraint's namespace and the selector matches its labels.

``scheduler_spread_counts`` and ``spread_rejection`` answer the other question, for the
offline plan's placement: would kube-scheduler's PodTopologySpread filter let a pod onto a
node (its DoNotSchedule constraints, counted over the nodes carrying all their keys)?

Pure: model objects in, answers out. ``minDomains`` is not read (upstream does not read it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.descheduler.core.rules.podindex import PodIndex
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.keys import SPREAD_CONSTRAINTS
from agent.kubesemantics.labelselector import Requirement, Selector, from_label_selector, matches
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.tolerations import untolerated
from agent.kubesemantics.wellknown import DO_NOT_SCHEDULE, HONOR, IGNORE

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def raw_spread_constraints(pod: PodInfo) -> tuple[Mapping[str, Any], ...]:
    """``spec.topologySpreadConstraints`` as sent (``()`` for most pods)."""
    found: tuple[Mapping[str, Any], ...] = pod.extra.get(SPREAD_CONSTRAINTS, ())
    return found


@dataclass(frozen=True)
class SpreadConstraint:
    """One constraint of one pod, ready to count (upstream's ``topologySpreadConstraint``).

    Equal constraints (same namespace, skew, key, selector and inclusion inputs) are the same
    constraint, however many pods carry them: upstream dedups them the same way.
    """

    namespace: str
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: Selector | None
    """Sorted requirements; ``None`` selects no pod."""
    node_affinity_policy: str
    node_taints_policy: str
    node_selector: tuple[tuple[str, str], ...] = ()
    """The owning pod's nodeSelector, kept only under ``nodeAffinityPolicy: Honor``."""
    required_node_affinity: Any = None
    """The owning pod's ``nodeAffinity.requiredDuringScheduling...``, only under Honor."""
    tolerations: tuple[Mapping[str, Any], ...] = ()
    """The owning pod's tolerations, kept only under ``nodeTaintsPolicy: Honor``."""

    def selects(self, pod: PodInfo) -> bool:
        return (
            self.selector is not None
            and pod.namespace == self.namespace
            and matches(self.selector, pod.labels)
        )

    def includes(self, node: NodeInfo) -> bool:
        """``matchNodeInclusionPolicies``: the node takes part in this constraint's domains."""
        if self.node_affinity_policy == HONOR:
            if node_selector_mismatch(dict(self.node_selector), node.labels):
                return False
            required = {REQUIRED: self.required_node_affinity}
            if required_affinity_mismatch(
                {"affinity": {"nodeAffinity": required}}, node.labels, node.name
            ):
                return False
        return not (
            self.node_taints_policy == HONOR and untolerated(node.taints, list(self.tolerations))
        )

    def domain_of(self, node: NodeInfo) -> str | None:
        """The node's domain (its ``topologyKey`` value), ``None`` without the label."""
        return node.labels.get(self.topology_key)


def with_match_label_keys(
    selector: Selector | None, pod: PodInfo, keys: Iterable[Any]
) -> Selector | None:
    """``selector`` and ``key in (value)`` for each of ``keys`` (``matchLabelKeys``) that
    ``pod`` carries, sorted; ``None`` (selects no pod) stays ``None``."""
    if selector is None:
        return None
    extra = [
        Requirement(str(key), "In", frozenset({pod.labels[str(key)]}))
        for key in keys
        if str(key) in pod.labels
    ]
    requirements = {*selector, *extra}
    return tuple(sorted(requirements, key=lambda r: (r.key, r.operator, sorted(r.values))))


def spread_constraint(raw: Mapping[str, Any], pod: PodInfo) -> SpreadConstraint:
    """One of ``pod``'s constraints; raises ``SelectorError`` when its selector is invalid."""
    affinity_policy = str(raw.get("nodeAffinityPolicy") or HONOR)
    taints_policy = str(raw.get("nodeTaintsPolicy") or IGNORE)
    node_affinity = ((pod.affinity or {}).get("nodeAffinity") or {}).get(REQUIRED)
    max_skew = raw.get("maxSkew")
    return SpreadConstraint(
        namespace=pod.namespace,
        max_skew=max_skew if isinstance(max_skew, int) and not isinstance(max_skew, bool) else 0,
        topology_key=str(raw.get("topologyKey") or ""),
        when_unsatisfiable=str(raw.get("whenUnsatisfiable") or ""),
        selector=with_match_label_keys(
            from_label_selector(raw.get("labelSelector")), pod, raw.get("matchLabelKeys") or ()
        ),
        node_affinity_policy=affinity_policy,
        node_taints_policy=taints_policy,
        node_selector=tuple(sorted(pod.node_selector.items())) if affinity_policy == HONOR else (),
        required_node_affinity=node_affinity if affinity_policy == HONOR else None,
        tolerations=pod.tolerations if taints_policy == HONOR else (),
    )


def domain_pods(
    constraint: SpreadConstraint, nodes: Mapping[str, NodeInfo], pods: Iterable[PodInfo]
) -> dict[str, list[PodInfo]]:
    """Pods the constraint selects, per domain: every included node's domain (empty when no
    pod runs there), plus the domain of any node of ``nodes`` a selected pod runs on
    (upstream counts those even when the inclusion policies leave the node out). Terminating
    pods, and pods on nodes outside ``nodes``, do not count."""
    domains: dict[str, list[PodInfo]] = {}
    for node in nodes.values():
        value = constraint.domain_of(node)
        if value is not None and constraint.includes(node):
            domains.setdefault(value, [])
    for pod in pods:
        if pod.deleting or not constraint.selects(pod):
            continue
        where = nodes.get(pod.node_name)
        value = constraint.domain_of(where) if where is not None else None
        if value is not None:
            domains.setdefault(value, []).append(pod)
    return domains


def domain_counts(
    constraint: SpreadConstraint, nodes: Mapping[str, NodeInfo], pods: Iterable[PodInfo]
) -> dict[str, int]:
    """How many pods ``domain_pods`` puts in each domain."""
    return {value: len(found) for value, found in domain_pods(constraint, nodes, pods).items()}


def skew(counts: Mapping[str, int]) -> int:
    """Largest minus smallest domain; 0 without domains."""
    return max(counts.values()) - min(counts.values()) if counts else 0


@dataclass(frozen=True)
class SpreadCounts:
    """One DoNotSchedule constraint of a pod being placed, counted as kube-scheduler's
    PodTopologySpread PreFilter counts it: per domain of the counting nodes, and the least."""

    constraint: SpreadConstraint
    counts: Mapping[str, int]
    least: int
    self_match: bool
    """The placed pod matches its own selector, so it adds one where it lands."""


def scheduler_spread_counts(
    pod: PodInfo, nodes: Iterable[NodeInfo], pods: PodIndex
) -> tuple[SpreadCounts, ...]:
    """kube-scheduler's PodTopologySpread PreFilter for ``pod``: its DoNotSchedule constraints
    counted over ``nodes`` (those passing the inclusion policies and carrying every key of the
    pod's DoNotSchedule constraints), from the pods in place (``pods``: neither terminating
    nor finished ones count), read through the index per constraint, never pod by pod.
    Computed once per placement, then ``spread_rejection`` answers per node. Raises
    ``SelectorError`` for a constraint whose selector does not parse.

    ``minDomains`` is not read (upstream's descheduler does not read it either)."""
    constraints = [
        spread_constraint(raw, pod)
        for raw in raw_spread_constraints(pod)
        if raw.get("whenUnsatisfiable") == DO_NOT_SCHEDULE
    ]
    if not constraints:
        return ()
    keys = {c.topology_key for c in constraints}
    counting = [n for n in nodes if all(key in n.labels for key in keys)]
    result: list[SpreadCounts] = []
    for constraint in constraints:
        on_node = pods.running_node_counts(constraint.namespace, constraint.selector)
        counts: dict[str, int] = {}
        for node in counting:
            if not constraint.includes(node):
                continue
            value = node.labels[constraint.topology_key]
            counts[value] = counts.get(value, 0) + on_node.get(node.name, 0)
        result.append(
            SpreadCounts(
                constraint=constraint,
                counts=counts,
                least=min(counts.values(), default=0),
                self_match=constraint.selects(pod),
            )
        )
    return tuple(result)


def spread_rejection(counted: Iterable[SpreadCounts], node: NodeInfo) -> str | None:
    """kube-scheduler's PodTopologySpread Filter on one node, or ``None`` when it passes."""
    for each in counted:
        key = each.constraint.topology_key
        value = node.labels.get(key)
        if value is None:
            return f"node has no label {key} (topology spread constraint)"
        skew = each.counts.get(value, 0) + int(each.self_match) - each.least
        if skew > each.constraint.max_skew:
            return f"topology spread on {key}: skew {skew} > maxSkew {each.constraint.max_skew}"
    return None
