"""Every default score plugin on every feasible node: the reference the rankings must match.

``scored_full`` is what kube-scheduler's ``prioritizeNodes`` does for one pod: each score
plugin's raw score per feasible node, its normalization over those nodes, times its weight,
summed (``scoring`` holds each plugin's arithmetic). It is O(feasible nodes) per pod, and
serves every pod the rankings cannot answer exactly (``fastscore``), and the test that checks
them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agent.descheduler.core.placement.nodes import PodSize, SimNode
from agent.descheduler.core.placement.profile import (
    IMAGES,
    INTER_POD,
    NODE_AFFINITY_PLUGIN,
    SPREAD,
    TAINTS,
)
from agent.descheduler.core.placement.scored import Scored
from agent.descheduler.core.placement.scoring import (
    HOSTNAME,
    AffinityTerms,
    SchedulerTerm,
    SpreadScoring,
    affinity_normalize,
    affinity_terms,
    default_normalize,
    image_locality,
    intolerable_taints,
    prefer_no_schedule_tolerations,
    preferred_node_affinity,
    spread_normalize,
    spread_raw,
    spread_scoring,
    topology_weight,
)
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kube.labelselector import matches
from agent.kube.nodeaffinity import node_selector_mismatch, required_affinity_mismatch

if TYPE_CHECKING:
    from agent.descheduler.core.placement.simulation import Simulation

FINISHED = frozenset({"Succeeded", "Failed"})


def scored_full(sim: Simulation, pod: PodInfo, feasible: Sequence[int]) -> Scored:
    """Every default score plugin on every feasible node, normalized, weighted, summed."""
    if len(feasible) == 1:
        return Scored(0, list(feasible))  # the scheduler does not score a lone node
    totals = node_totals(sim, pod, feasible)
    best = max(totals)
    return Scored(
        best, [index for index, total in zip(feasible, totals, strict=True) if total == best]
    )


def node_totals(sim: Simulation, pod: PodInfo, feasible: Sequence[int]) -> list[int]:
    """The scheduler's total score of each feasible node for ``pod``, in their order: the
    number its ``--v=10`` log prints per node."""
    nodes = [sim.nodes[index] for index in feasible]
    size = PodSize.of(pod)
    profile = sim.profile
    totals = [node.resource_score(size, profile) for node in nodes]
    zeros = [0] * len(nodes)
    taint_weight = profile.weight(TAINTS)
    affinity_weight = profile.weight(NODE_AFFINITY_PLUGIN)
    image_weight = profile.weight(IMAGES)
    tolerations = prefer_no_schedule_tolerations(pod)
    taints = (
        default_normalize(
            [intolerable_taints(node.info.taints, tolerations) for node in nodes], reverse=True
        )
        if taint_weight
        else zeros
    )
    affinity = (
        default_normalize(
            [preferred_node_affinity(pod, node.info.labels, node.info.name) for node in nodes],
            reverse=False,
        )
        if affinity_weight
        else zeros
    )
    spread = _spread_scores(sim, pod, nodes) if profile.weight(SPREAD) else zeros
    inter_pod = (
        _affinity_scores(sim, pod, nodes, profile.hard_pod_affinity_weight)
        if profile.weight(INTER_POD)
        else zeros
    )
    images = (
        [
            image_locality(node.info.images, pod.images, sim.image_nodes, len(sim.nodes))
            for node in nodes
        ]
        if image_weight
        else zeros
    )
    for position in range(len(nodes)):
        totals[position] += (
            taint_weight * taints[position]
            + affinity_weight * affinity[position]
            + profile.weight(SPREAD) * spread[position]
            + profile.weight(INTER_POD) * inter_pod[position]
            + image_weight * images[position]
        )
    return totals


def _spread_scores(sim: Simulation, pod: PodInfo, nodes: Sequence[SimNode]) -> list[int]:
    """PodTopologySpread's normalized scores of ``nodes`` (the feasible ones)."""
    scoring = spread_scoring(pod)
    if not scoring.constraints:
        return [0 for _ in nodes]
    keys = [c.topology_key for c in scoring.constraints]
    ignored = {
        node.index
        for node in nodes
        if scoring.require_all_topologies and not all(k in node.info.labels for k in keys)
    }
    counted_nodes = [node for node in nodes if node.index not in ignored]
    weights = [
        topology_weight(
            len(counted_nodes)
            if key == HOSTNAME
            else len({node.info.labels.get(key, "") for node in counted_nodes})
        )
        for key in keys
    ]
    pairs = [
        {node.info.labels.get(key, "") for node in counted_nodes} if key != HOSTNAME else set()
        for key in keys
    ]
    domain_counts: list[Counter[str]] = [Counter() for _ in keys]
    per_node: dict[int, list[int]] = {}
    owner = sim.owners.get(scoring.selector_owner, Counter())
    for node in _counting_nodes(sim, pod, scoring):
        if scoring.selector_owner:  # the system defaults: the controller's pods, counted
            matching = [owner.get(node.index, 0)] * len(keys)
        else:
            matching = [
                sum(
                    1
                    for other in sim.pods_on(node.info.name)
                    if _counts(other) and c.selects(other)
                )
                for c in scoring.constraints
            ]
        per_node[node.index] = matching
        for position, key in enumerate(keys):
            value = node.info.labels.get(key, "")
            if key != HOSTNAME and value in pairs[position]:
                domain_counts[position][value] += matching[position]
    raws: list[int | None] = []
    for node in nodes:
        if node.index in ignored:
            raws.append(None)
            continue
        counts: list[int | None] = []
        for position, key in enumerate(keys):
            label = node.info.labels.get(key)
            if label is None:
                counts.append(None)
            elif key == HOSTNAME:
                counts.append(per_node.get(node.index, [0] * len(keys))[position])
            else:
                counts.append(domain_counts[position][label])
        raws.append(spread_raw(counts, [c.max_skew for c in scoring.constraints], weights))
    return spread_normalize(raws)


def _counting_nodes(sim: Simulation, pod: PodInfo, scoring: SpreadScoring) -> Iterable[SimNode]:
    """The nodes whose pods PodTopologySpread counts: those matching the pod's
    nodeSelector and required node affinity (``nodeAffinityPolicy: Honor``), with every
    key when the pod's own constraints require all."""
    keys = [c.topology_key for c in scoring.constraints]
    for node in sim.nodes:
        labels = node.info.labels
        if scoring.require_all_topologies and not all(k in labels for k in keys):
            continue
        if node_selector_mismatch(pod.node_selector, labels) or required_affinity_mismatch(
            {"affinity": pod.affinity or {}}, labels, node.info.name
        ):
            continue
        yield node


def _affinity_scores(
    sim: Simulation, pod: PodInfo, nodes: Sequence[SimNode], hard_weight: int
) -> list[int]:
    """InterPodAffinity's normalized scores of ``nodes``; 0 when it has nothing to say."""
    own = affinity_terms(pod)
    scorers: Iterable[PodInfo] = (
        sim.pods()
        if own.preferred_affinity or own.preferred_anti_affinity
        else sim.affinity_scorers
    )
    namespaces = sim.snapshot.namespaces
    own = _resolved(own, namespaces)
    pod_namespace_labels = namespaces.get(pod.namespace, {})
    topology: dict[str, Counter[str]] = {}
    scored = False

    def add(key: str, node: NodeInfo, weight: int) -> None:
        nonlocal scored
        value = node.labels.get(key)
        if value is not None:
            topology.setdefault(key, Counter())[value] += weight
            scored = True

    for existing in scorers:
        if existing.phase in FINISHED or existing.uid == pod.uid:
            continue
        where = sim.snapshot.nodes.get(existing.node_name)
        if where is None or not where.labels:
            continue
        theirs = affinity_terms(existing)
        # (terms, who they must select, that one's namespace labels, weight or sign)
        for terms, target, labels, factor in (
            (own.preferred_affinity, existing, {}, 1),
            (own.preferred_anti_affinity, existing, {}, -1),
            (theirs.required_affinity, pod, pod_namespace_labels, 0),
            (theirs.preferred_affinity, pod, pod_namespace_labels, 1),
            (theirs.preferred_anti_affinity, pod, pod_namespace_labels, -1),
        ):
            for term in terms:
                if term.matches(target, labels):
                    weight = factor * term.weight if factor else hard_weight
                    add(term.topology_key, where, weight)
    if not scored:
        return [0 for _ in nodes]
    raws = [
        sum(
            counts.get(node.info.labels[key], 0)
            for key, counts in topology.items()
            if key in node.info.labels
        )
        for node in nodes
    ]
    return affinity_normalize(raws)


def _resolved(terms: AffinityTerms, namespaces: Mapping[str, Mapping[str, str]]) -> AffinityTerms:
    """The incoming pod's preferred terms with their namespace selectors resolved to
    namespace names (``mergeAffinityTermNamespacesIfNotEmpty``)."""

    def resolve(term: SchedulerTerm) -> SchedulerTerm:
        selector = term.namespace_selector
        if selector is None:
            return term
        chosen = {name for name, labels in namespaces.items() if matches(selector, labels)}
        return replace(term, namespaces=term.namespaces | chosen, namespace_selector=None)

    return AffinityTerms(
        tuple(resolve(t) for t in terms.preferred_affinity),
        tuple(resolve(t) for t in terms.preferred_anti_affinity),
        terms.required_affinity,
    )


def _counts(pod: PodInfo) -> bool:
    """Whether a pod counts for spread scores (``countPodsMatchSelector``: not terminating)."""
    return not pod.deleting and pod.phase not in FINISHED
