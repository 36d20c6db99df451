"""The common case, answered from the rankings: ``fullscore``'s result without scoring every
node.

A pod with no preferred affinity, no pod affinity terms anywhere in the cluster, no
PreferNoSchedule taint it minds, none of its images on a node and only cpu and memory
requests gets the same TaintToleration, NodeAffinity, InterPodAffinity and ImageLocality score
on every feasible node. What differs between nodes is the resource scores (``Ranking``, per
pod size and zone, kept up to date as pods move) and the system default spread, which differs
only between zones and on the few nodes holding pods of the pod's controller. So the best
nodes of each zone are read from the top of its ranking, and the few special nodes are scored
one by one. A test compares this with ``scored_full`` on random clusters, move after move.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from agent.descheduler.core.placement.nodes import PodSize
from agent.descheduler.core.placement.plannedcluster import PlannedCluster
from agent.descheduler.core.placement.profile import SPREAD, TAINTS
from agent.descheduler.core.placement.scored import Scored
from agent.descheduler.core.placement.scoring import (
    MAX_NODE_SCORE,
    NO_TERMS,
    SpreadScoring,
    affinity_terms,
    intolerable_taints,
    normalized_image_name,
    prefer_no_schedule_tolerations,
    spread_normalize,
    spread_raw,
    spread_scoring,
    topology_weight,
)
from agent.descheduler.model.cluster import CPU, MEMORY, PODS, PodInfo
from agent.descheduler.model.keys import SPREAD_CONSTRAINTS
from agent.kubesemantics.wellknown import HOSTNAME_LABEL

NO_SPREAD = SpreadScoring((), require_all_topologies=False)
"""PodTopologySpread switched off in the profile: no constraint scores."""


def fast_path_applies(sim: PlannedCluster, pod: PodInfo, static: frozenset[int]) -> bool:
    """Whether every score but the resource ones and the system default spread is the
    same on every feasible node (so the rankings answer exactly)."""
    if any(name not in (CPU, MEMORY, PODS) and amount > 0 for name, amount in pod.requests.items()):
        return False
    if pod.node_selector or (pod.affinity or {}).get("nodeAffinity"):
        return False
    if pod.extra.get(SPREAD_CONSTRAINTS):
        return False
    if sim.has_affinity_scorers or affinity_terms(pod) is not NO_TERMS:
        return False
    if any(sim.image_nodes.get(normalized_image_name(i)) for i in pod.images):
        return False
    tolerations = prefer_no_schedule_tolerations(pod)
    return not any(
        index in static and intolerable_taints(sim.nodes[index].info.taints, tolerations)
        for index in sim.soft_tainted
    )


def scored_fast(sim: PlannedCluster, pod: PodInfo, static: frozenset[int]) -> Scored | None:
    """``_scored_full``'s answer from the rankings; ``None`` when no node is feasible
    (the caller then says why)."""
    size = PodSize.of(pod)
    ranking = sim.ranking(size)
    own = sim.index.get(pod.node_name, -1)
    feasible = ranking.fits & static
    feasible.discard(own)
    if len(feasible) <= 1:
        return Scored(0, sorted(feasible)) if feasible else None
    scoring = spread_scoring(pod) if sim.profile.weight(SPREAD) else NO_SPREAD
    counts: Mapping[int, int] = {}
    special: set[int] = set()
    if scoring.constraints:
        counts = sim.owners.get(scoring.selector_owner, Counter())
        # Nodes whose score is not their zone's: those holding pods of the controller, and
        # those missing the hostname label (they skip that constraint).
        special = {i for i in counts if i in feasible} | (sim.unnamed_hosts & feasible)
    zones = {zone for zone, members in sim.zone_members.items() if not members.isdisjoint(feasible)}
    extra = _zone_scores(
        sim, scoring, counts=counts, feasible=feasible, zones=zones, special=special
    )
    best = -1
    found: list[int] = []

    def offer(index: int, total: int) -> None:
        nonlocal best
        if total > best:
            best, found[:] = total, [index]
        elif total == best:
            found.append(index)

    for zone, order in ranking.zones.items():
        if zone not in zones:
            continue
        zone_extra = extra.zone(zone)
        top: int | None = None
        for negative, index in order:
            if index not in feasible or index in special:
                continue
            if top is None:
                top = -negative
            elif -negative < top:
                break  # the zone's best resource score is behind: nothing more ties here
            offer(index, -negative + zone_extra)
    for index in special:
        offer(index, ranking.scores[index] + extra.node(index))
    return Scored(best, found)


def _zone_scores(
    sim: PlannedCluster,
    scoring: SpreadScoring,
    *,
    counts: Mapping[int, int],
    feasible: set[int],
    zones: set[str | None],
    special: set[int],
) -> _Extras:
    """The scores besides the resource ones, per zone for ordinary nodes and per special
    node: TaintToleration's constant and the normalized system default spread."""
    # TaintToleration's weighted score on every node when no node has a PreferNoSchedule
    # taint the pod minds (all counts 0, normalized in reverse: 100 each).
    taint_constant = sim.profile.weight(TAINTS) * MAX_NODE_SCORE
    spread_weight = sim.profile.weight(SPREAD)
    if not scoring.constraints or not spread_weight:
        return _Extras(dict.fromkeys(zones, taint_constant), {})
    host_weight = topology_weight(len(feasible))
    pair_values = {zone if zone is not None else "" for zone in zones}
    zone_weight = topology_weight(len(pair_values))
    in_zone: Counter[str] = Counter()
    for index, count in counts.items():
        value = sim.nodes[index].zone
        if (value if value is not None else "") in pair_values:
            in_zone[value if value is not None else ""] += count
    host_skew, zone_skew = (c.max_skew for c in scoring.constraints)

    def raw(index: int | None, zone: str | None) -> int:
        host = (
            None
            if index is not None and HOSTNAME_LABEL not in sim.nodes[index].info.labels
            else (counts.get(index, 0) if index is not None else 0)
        )
        domain = None if zone is None else in_zone[zone]
        return spread_raw([host, domain], [host_skew, zone_skew], [host_weight, zone_weight])

    ordinary = {
        zone
        for zone in zones
        if any(index not in special for index in feasible if sim.nodes[index].zone == zone)
    }
    ordered_zones = sorted(ordinary, key=str)
    ordered_nodes = sorted(special)
    raws: list[int | None] = [
        *(raw(None, zone) for zone in ordered_zones),
        *(raw(index, sim.nodes[index].zone) for index in ordered_nodes),
    ]
    normalized = spread_normalize(raws)
    by_zone = {
        zone: taint_constant + spread_weight * score
        for zone, score in zip(ordered_zones, normalized, strict=False)
    }
    by_node = {
        index: taint_constant + spread_weight * score
        for index, score in zip(ordered_nodes, normalized[len(ordered_zones) :], strict=True)
    }
    return _Extras(by_zone, by_node)


@dataclass(frozen=True)
class _Extras:
    by_zone: Mapping[str | None, int]
    by_node: Mapping[int, int]

    def zone(self, zone: str | None) -> int:
        return self.by_zone.get(zone, 0)

    def node(self, index: int) -> int:
        return self.by_node[index]
