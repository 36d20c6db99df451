"""kube-scheduler's default scoring, on the model: how much a new pod would like each node.

The offline plan predicts where an evicted pod's replacement lands, and the one that decides
is the default kube-scheduler profile. Its score plugins and weights (1.28's
``getDefaultPlugins``), each reproduced here with its own integer arithmetic and its own
normalization over the nodes that passed the filters:

=============================  ======  =====================================================
plugin                         weight  score (0..100 after normalization)
=============================  ======  =====================================================
TaintToleration                3       PreferNoSchedule taints the pod does not tolerate,
                                       fewest best (``DefaultNormalizeScore``, reversed)
NodeAffinity                   2       summed weights of the preferred terms the node
                                       matches, relative to the best node
NodeResourcesFit               1       ``LeastAllocated`` on cpu and memory, weight 1 each,
                                       on non-zero requests (100m / 200Mi stand in for none)
PodTopologySpread              2       the pod's ScheduleAnyway constraints, else the system
                                       defaults (hostname maxSkew 3, zone maxSkew 5) over the
                                       pods of its controller; fewer matching pods best
InterPodAffinity               2       preferred pod (anti-)affinity of the pod and of the
                                       pods already placed, existing pods' required affinity
                                       at weight 1; min-max normalized
NodeResourcesBalancedAllocation 1      1 - the std. dev. of the cpu and memory fractions
                                       (actual requests, pod added)
ImageLocality                  1       sizes of the pod's images on the node, scaled by how
                                       many nodes have them
=============================  ======  =====================================================

A plugin whose PreScore skips (no spread constraints, no affinity terms anywhere) adds 0 to
every node, as the scheduler skips it. The highest total wins; the scheduler picks at random
among equal totals, so the prediction is the set of nodes tied at the best total.

Where this is an approximation, on purpose: the system default spread selector is the pods
of the same controller (ReplicaSet, ReplicationController, StatefulSet), where the scheduler
merges the selectors of those controllers and of the Services selecting the pod (equal for
the usual Deployment, whose ReplicaSet selector carries ``pod-template-hash``); non-zero
defaults apply per pod, not per container (the same for single-container pods).

Pure: numbers and model objects in, scores out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.descheduler.core.rules.topology import with_match_label_keys
from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.model.keys import SPREAD_CONSTRAINTS
from agent.kubesemantics.labelselector import Selector, SelectorError, from_label_selector, matches
from agent.kubesemantics.nodeaffinity import preferred_affinity_weight
from agent.kubesemantics.tolerations import tolerates
from agent.kubesemantics.wellknown import (
    HOSTNAME_LABEL,
    PREFER_NO_SCHEDULE,
    REPLICA_SET_KIND,
    REPLICATION_CONTROLLER_KIND,
    SCHEDULE_ANYWAY,
    STATEFUL_SET_KIND,
    ZONE_LABEL,
)

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU_REQUEST = 100
"""kube-scheduler's ``DefaultMilliCPURequest``, what a pod asking no cpu counts in scores."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""kube-scheduler's ``DefaultMemoryRequest`` (200Mi)."""

TAINT_TOLERATION = 3
NODE_AFFINITY = 2
RESOURCES_FIT = 1
TOPOLOGY_SPREAD = 2
INTER_POD_AFFINITY = 2
BALANCED_ALLOCATION = 1
IMAGE_LOCALITY = 1

SPREAD_CONTROLLERS = frozenset({REPLICA_SET_KIND, REPLICATION_CONTROLLER_KIND, STATEFUL_SET_KIND})
"""Controllers whose selector the scheduler's system default spread constraints use."""
HARD_POD_AFFINITY_WEIGHT = 1
"""``InterPodAffinityArgs.hardPodAffinityWeight``'s default."""
MB = 1024 * 1024
IMAGE_MIN = 23 * MB
IMAGE_MAX_PER_CONTAINER = 1000 * MB


def nonzero_size(pod: PodInfo) -> tuple[int, int]:
    """The pod's cpu (millicores) and memory as the scheduler's scores count them."""
    return (
        pod.requests.get("cpu", 0) or DEFAULT_MILLI_CPU_REQUEST,
        pod.requests.get("memory", 0) or DEFAULT_MEMORY_REQUEST,
    )


# -- NodeResourcesFit (LeastAllocated) and NodeResourcesBalancedAllocation ---------------


def _least_requested(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int] = (1, 1)
) -> int:
    """``leastResourceScorer``: the weighted mean of each resource's free share; resources
    without allocatable are left out."""
    return _weighted(_least_requested, requested, allocatable, weights)


def _most_requested(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def most_allocated(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int] = (1, 1)
) -> int:
    """``mostResourceScorer``: the weighted mean of each resource's used share (capped at
    100), for bin packing."""
    return _weighted(_most_requested, requested, allocatable, weights)


def _weighted(
    score: Callable[[int, int], int],
    requested: Sequence[int],
    allocatable: Sequence[int],
    weights: Sequence[int],
) -> int:
    total = weight_sum = 0
    for used, capacity, weight in zip(requested, allocatable, weights, strict=True):
        if capacity == 0:
            continue
        total += score(used, capacity) * weight
        weight_sum += weight
    return total // weight_sum if weight_sum else 0


def balanced_allocation(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: 1 minus the standard deviation of the used fractions."""
    fractions = [
        min(1.0, used / capacity)
        for used, capacity in zip(requested, allocatable, strict=True)
        if capacity != 0
    ]
    if len(fractions) == 2:
        deviation = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        deviation = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        deviation = 0.0
    return int((1 - deviation) * MAX_NODE_SCORE)


# -- TaintToleration, NodeAffinity, ImageLocality (raw scores) ----------------------------


def prefer_no_schedule_tolerations(pod: PodInfo) -> tuple[Mapping[str, Any], ...]:
    """``getAllTolerationPreferNoSchedule``: tolerations with no effect or PreferNoSchedule."""
    return tuple(
        t for t in pod.tolerations if not t.get("effect") or t.get("effect") == PREFER_NO_SCHEDULE
    )


def intolerable_taints(
    taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> int:
    """``countIntolerableTaintsPreferNoSchedule``."""
    return sum(
        1
        for taint in taints
        if taint.get("effect") == PREFER_NO_SCHEDULE
        and not any(tolerates(toleration, taint) for toleration in tolerations)
    )


def preferred_node_affinity(pod: PodInfo, labels: Mapping[str, str], name: str) -> int:
    """NodeAffinity's raw score: the weights of the pod's preferred terms the node matches."""
    if not ((pod.affinity or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    ):
        return 0
    return preferred_affinity_weight({"affinity": pod.affinity}, labels, name)


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: an image without a tag means ``:latest``."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def image_locality(
    node_images: Mapping[str, int],
    images: Sequence[str],
    nodes_with_image: Mapping[str, int],
    total_nodes: int,
) -> int:
    """``ImageLocality.Score``: the pod's images present on the node, each scaled by the share
    of nodes that have it, clamped between 23 MB and 1000 MB per container."""
    total = 0
    for image in images:
        name = normalized_image_name(image)
        size = node_images.get(name)
        if size is not None and total_nodes:
            total += int(size * (nodes_with_image.get(name, 0) / total_nodes))
    highest = IMAGE_MAX_PER_CONTAINER * max(1, len(images))
    clamped = min(max(total, IMAGE_MIN), highest)
    return MAX_NODE_SCORE * (clamped - IMAGE_MIN) // (highest - IMAGE_MIN)


# -- normalizations -----------------------------------------------------------------------


def default_normalize(raw: Sequence[int], *, reverse: bool) -> list[int]:
    """``helper.DefaultNormalizeScore``."""
    highest = max(raw, default=0)
    if highest == 0:
        return [MAX_NODE_SCORE if reverse else 0 for _ in raw]
    normalized = [MAX_NODE_SCORE * score // highest for score in raw]
    return [MAX_NODE_SCORE - score for score in normalized] if reverse else normalized


def spread_normalize(raw: Sequence[int | None]) -> list[int]:
    """PodTopologySpread's ``NormalizeScore``: fewer matching pods best; ``None`` (a node the
    constraints ignore) scores 0."""
    counted = [score for score in raw if score is not None]
    if not counted:
        return [0 for _ in raw]
    lowest, highest = min(counted), max(counted)
    return [
        0
        if score is None
        else MAX_NODE_SCORE
        if highest == 0
        else MAX_NODE_SCORE * (highest + lowest - score) // highest
        for score in raw
    ]


def affinity_normalize(raw: Sequence[int]) -> list[int]:
    """InterPodAffinity's ``NormalizeScore``: min-max, truncated."""
    lowest, highest = min(raw, default=0), max(raw, default=0)
    spread = highest - lowest
    if spread <= 0:
        return [0 for _ in raw]
    return [int(MAX_NODE_SCORE * ((score - lowest) / spread)) for score in raw]


def go_round(value: float) -> int:
    """Go's ``math.Round`` for a non-negative value: halves away from zero."""
    return math.floor(value + 0.5)


# -- PodTopologySpread --------------------------------------------------------------------


@dataclass(frozen=True)
class SoftSpread:
    """One constraint the scores count: its key and skew, and which pods it counts. A pod's
    own constraint counts the pods of ``namespace`` that ``selector`` selects (``None``:
    none), ``matchLabelKeys`` merged in; the system defaults count the pods of the pod's
    controller instead (``SpreadScoring.selector_owner``) and carry no selector."""

    topology_key: str
    max_skew: int
    namespace: str
    selector: Selector | None = None


@dataclass(frozen=True)
class SpreadScoring:
    """The pod's scoring constraints (``initPreScoreState``), or none (the plugin skips)."""

    constraints: tuple[SoftSpread, ...]
    require_all_topologies: bool
    """The pod's own constraints: a node lacking a key is left out (scores 0). The system
    defaults are laxer: such a node just adds nothing for that key."""
    selector_owner: str = ""
    """For the system defaults, the controller UID whose pods they count (``""`` otherwise)."""
    node_affinity_honored: bool = True


def spread_scoring(pod: PodInfo) -> SpreadScoring:
    """The constraints PodTopologySpread scores ``pod`` by; raises ``SelectorError`` for a
    selector of the pod's own that does not parse."""
    own = [
        raw
        for raw in (pod.extra.get(SPREAD_CONSTRAINTS) or ())
        if raw.get("whenUnsatisfiable") == SCHEDULE_ANYWAY
    ]
    if pod.extra.get(SPREAD_CONSTRAINTS):
        return SpreadScoring(
            tuple(_own_constraint(raw, pod) for raw in own), require_all_topologies=True
        )
    controller = pod.controller
    if controller is None or controller.kind not in SPREAD_CONTROLLERS or not controller.uid:
        return SpreadScoring((), require_all_topologies=False)
    return SpreadScoring(
        (
            SoftSpread(HOSTNAME_LABEL, 3, pod.namespace),
            SoftSpread(ZONE_LABEL, 5, pod.namespace),
        ),
        require_all_topologies=False,
        selector_owner=controller.uid,
    )


def _own_constraint(raw: Mapping[str, Any], pod: PodInfo) -> SoftSpread:
    selector = with_match_label_keys(
        from_label_selector(raw.get("labelSelector")), pod, raw.get("matchLabelKeys") or ()
    )
    skew = raw.get("maxSkew")
    return SoftSpread(
        str(raw.get("topologyKey") or ""),
        skew if isinstance(skew, int) and not isinstance(skew, bool) else 1,
        pod.namespace,
        selector,
    )


def topology_weight(size: int) -> float:
    """``topologyNormalizingWeight``."""
    return math.log(size + 2)


def spread_raw(
    counts: Sequence[int | None], max_skews: Sequence[int], weights: Sequence[float]
) -> int:
    """PodTopologySpread's raw ``Score`` of one node: per constraint whose key the node has
    (``None`` otherwise), the matching pods in its domain times the constraint's weight, plus
    ``maxSkew - 1``; rounded as Go rounds."""
    score = 0.0
    for count, max_skew, weight in zip(counts, max_skews, weights, strict=True):
        if count is not None:
            score += count * weight + (max_skew - 1)
    return go_round(score)


# -- InterPodAffinity ---------------------------------------------------------------------


@dataclass(frozen=True)
class SchedulerTerm:
    """One pod affinity term as the scheduler reads it (``framework.AffinityTerm``): its
    namespaces, or a namespace selector, and its label selector."""

    namespaces: frozenset[str]
    namespace_selector: Selector | None
    """``None``: none given (matches no namespace); ``()``: ``{}`` (every namespace)."""
    selector: Selector | None
    topology_key: str
    weight: int = 0

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        in_namespace = pod.namespace in self.namespaces or (
            self.namespace_selector is not None
            and matches(self.namespace_selector, namespace_labels)
        )
        return in_namespace and self.selector is not None and matches(self.selector, pod.labels)


def scheduler_term(raw: Mapping[str, Any], owner: PodInfo, weight: int = 0) -> SchedulerTerm:
    """``newAffinityTerm``; raises ``SelectorError`` for a selector that does not parse."""
    listed = frozenset(str(n) for n in raw.get("namespaces") or ())
    namespace_selector = raw.get("namespaceSelector")
    if not listed and namespace_selector is None:
        listed = frozenset({owner.namespace})
    return SchedulerTerm(
        namespaces=listed,
        namespace_selector=(
            None if namespace_selector is None else from_label_selector(namespace_selector)
        ),
        selector=from_label_selector(raw.get("labelSelector")),
        topology_key=str(raw.get("topologyKey") or ""),
        weight=weight,
    )


def _terms(pod: PodInfo, kind: str, required: bool) -> tuple[SchedulerTerm, ...]:
    block = (pod.affinity or {}).get(kind) or {}
    if required:
        raws = block.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        return tuple(scheduler_term(raw, pod) for raw in raws)
    weighted = block.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    return tuple(
        scheduler_term(raw.get("podAffinityTerm") or {}, pod, int(raw.get("weight") or 0))
        for raw in weighted
    )


@dataclass(frozen=True)
class AffinityTerms:
    """What InterPodAffinity scores with, of one pod."""

    preferred_affinity: tuple[SchedulerTerm, ...]
    preferred_anti_affinity: tuple[SchedulerTerm, ...]
    required_affinity: tuple[SchedulerTerm, ...]

    @property
    def scores(self) -> bool:
        return bool(
            self.preferred_affinity or self.preferred_anti_affinity or self.required_affinity
        )


def affinity_terms(pod: PodInfo) -> AffinityTerms:
    """The pod's terms that scores read; a pod whose terms do not parse has none (the
    scheduler skips such an existing pod, and fails such an incoming pod's PreScore)."""
    if pod.affinity is None:
        return NO_TERMS
    try:
        return AffinityTerms(
            preferred_affinity=_terms(pod, "podAffinity", False),
            preferred_anti_affinity=_terms(pod, "podAntiAffinity", False),
            required_affinity=_terms(pod, "podAffinity", True),
        )
    except SelectorError:
        return NO_TERMS


NO_TERMS = AffinityTerms((), (), ())
