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

from agent.descheduler.core.placement.nodes import PodSize, SimNode
from agent.descheduler.core.placement.plannedcluster import PlannedCluster
from agent.descheduler.core.placement.profile import (
    IMAGES,
    INTER_POD,
    NODE_AFFINITY_PLUGIN,
    SPREAD,
    TAINTS,
)
from agent.descheduler.core.placement.scored import Scored
from agent.descheduler.core.placement.scoring import (
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
from agent.descheduler.model.cluster import PodInfo
from agent.kubesemantics.labelselector import matches
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.wellknown import HOSTNAME_LABEL


def scored_full(sim: PlannedCluster, pod: PodInfo, feasible: Sequence[int]) -> Scored:
    """Every default score plugin on every feasible node, normalized, weighted, summed."""
    if len(feasible) == 1:
        return Scored(0, list(feasible))  # the scheduler does not score a lone node
    totals = node_totals(sim, pod, feasible)
    best = max(totals)
    return Scored(
        best, [index for index, total in zip(feasible, totals, strict=True) if total == best]
    )


def node_totals(sim: PlannedCluster, pod: PodInfo, feasible: Sequence[int]) -> list[int]:
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


def _spread_scores(sim: PlannedCluster, pod: PodInfo, nodes: Sequence[SimNode]) -> list[int]:
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
            if key == HOSTNAME_LABEL
            else len({node.info.labels.get(key, "") for node in counted_nodes})
        )
        for key in keys
    ]
    pairs = [
        {node.info.labels.get(key, "") for node in counted_nodes}
        if key != HOSTNAME_LABEL
        else set()
        for key in keys
    ]
    domain_counts: list[Counter[str]] = [Counter() for _ in keys]
    per_node: dict[int, list[int]] = {}
    owner = sim.owners.get(scoring.selector_owner, Counter())
    # The pod's own constraints: the pods each selects, per node, read through the index.
    selected = (
        []
        if scoring.selector_owner
        else [
            sim.pod_index.running_node_counts(c.namespace, c.selector) for c in scoring.constraints
        ]
    )
    for node in _counting_nodes(sim, pod, scoring):
        if scoring.selector_owner:  # the system defaults: the controller's pods, counted
            matching = [owner.get(node.index, 0)] * len(keys)
        else:
            matching = [on_node.get(node.info.name, 0) for on_node in selected]
        per_node[node.index] = matching
        for position, key in enumerate(keys):
            value = node.info.labels.get(key, "")
            if key != HOSTNAME_LABEL and value in pairs[position]:
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
            elif key == HOSTNAME_LABEL:
                counts.append(per_node.get(node.index, [0] * len(keys))[position])
            else:
                counts.append(domain_counts[position][label])
        raws.append(spread_raw(counts, [c.max_skew for c in scoring.constraints], weights))
    return spread_normalize(raws)


def _counting_nodes(sim: PlannedCluster, pod: PodInfo, scoring: SpreadScoring) -> Iterable[SimNode]:
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
    sim: PlannedCluster, pod: PodInfo, nodes: Sequence[SimNode], hard_weight: int
) -> list[int]:
    """InterPodAffinity's normalized scores of ``nodes``; 0 when it has nothing to say.

    Its PreScore's topology scores, by topology key and value: the pod's own preferred
    (anti-)affinity terms add their weight for each pod in place they select, in that pod's
    domain; the terms of the pods in place that select the pod add theirs (required
    affinity at ``hard_weight``) in their owner's domain. Both are read from the simulation's
    indexes, term by term, never pod by pod.
    """
    namespaces = sim.snapshot.namespaces
    own = _resolved(affinity_terms(pod), namespaces)
    pod_namespace_labels = namespaces.get(pod.namespace, {})
    topology: dict[str, Counter[str]] = {}
    excluding = sim.slots_of(pod.uid)
    for terms, sign in ((own.preferred_affinity, 1), (own.preferred_anti_affinity, -1)):
        for term in terms:
            counts = sim.pod_index.domain_counts(
                term.namespaces, term.selector, term.topology_key, excluding=excluding
            )
            _add(topology, term.topology_key, counts, sign * term.weight)

    def selects(term: SchedulerTerm) -> bool:
        return term.matches(pod, pod_namespace_labels)

    for existing, weight_of in (
        (sim.required_affinity, lambda _: hard_weight),
        (sim.preferred_affinity, lambda term: term.weight),
        (sim.preferred_anti_affinity, lambda term: -term.weight),
    ):
        for term, counts in existing.selecting(pod.labels, selects, excluding_uid=pod.uid):
            _add(topology, term.topology_key, counts, weight_of(term))
    if not topology:
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


def _add(
    topology: dict[str, Counter[str]], key: str, counts: Mapping[str, int], weight: int
) -> None:
    """Add ``weight`` once per pod of ``counts`` to the topology scores of ``key``."""
    if counts:
        scores = topology.setdefault(key, Counter())
        for value, count in counts.items():
            scores[value] += weight * count


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
