"""The affinity index answers exactly what pod-against-pod reading answers, and its work grows
linearly.

Each rule that reads other pods' labels through the index (the anti-affinity violation
check, node fit, the scheduler's anti-affinity filter and InterPodAffinity's scores) is
compared, on random states, with the pairwise reading written out here as upstream writes it
(``CheckPodsWithAntiAffinityExist``, ``podMatchesInterPodAntiAffinity``, the scheduler's
filter and PreScore one pod in place at a time). The states mix namespaces (with and
without a term's ``namespaces``, with a ``namespaceSelector``), label keys and values, pods
without labels, finished pods, pods sharing a name across namespaces, selectors of every
operator (and ``{}``, absent, and one that does not parse), hostname, zone and absent
topology keys, several terms per pod; and pods leave (and replacements arrive) one at a time,
as an eviction takes them out.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.descheduler.core.placement.fullscore import _affinity_scores, _resolved
from agent.descheduler.core.placement.scoring import affinity_normalize, affinity_terms
from agent.descheduler.core.placement.simulation import Simulation
from agent.descheduler.core.rules.antiaffinity import (
    NodeFitAntiAffinity,
    anti_affinity_terms,
    forbidden_domains,
    has_required_anti_affinity,
    violation,
)
from agent.descheduler.core.rules.podindex import PodIndex, Slot
from agent.descheduler.model.cluster import ClusterSnapshot, NodeInfo, PodInfo
from agent.kubesemantics.labelselector import SelectorError
from agent.kubesemantics.podaffinity import affinity_term
from tests.harness.deschedulerstate import node, pod, snapshot
from tests.harness.kubeobjects import namespace, owner_ref

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
"""A topology key only some nodes carry."""
ABSENT_KEY = "example.com/nowhere"
"""A topology key no node carries."""
FINISHED = ("Succeeded", "Failed")
NAMESPACES = ("shop", "data", "ops")
KEYS = ("app", "tier")
VALUES = ("a", "b", "c")

# -- random states ------------------------------------------------------------------------

_labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)


@st.composite
def _requirement(draw: st.DrawFn) -> dict[str, Any]:
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
    requirement: dict[str, Any] = {"key": draw(st.sampled_from(KEYS)), "operator": operator}
    if operator in ("In", "NotIn"):
        requirement["values"] = draw(
            st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True)
        )
    return requirement


@st.composite
def _selector(draw: st.DrawFn) -> dict[str, Any] | None:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return None  # selects no pod
    if kind == 1:
        return {}  # selects every pod
    # (A selector that does not parse never gets this far: the projection refuses its pod.
    # How the rules cope with one anyway: test_descheduler_antiaffinity.)
    selector: dict[str, Any] = {}
    match_labels = draw(_labels)
    if match_labels:
        selector["matchLabels"] = match_labels
    expressions = draw(st.lists(_requirement(), max_size=2))
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


@st.composite
def _term(draw: st.DrawFn, weight: bool = False) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": draw(st.sampled_from([HOST, ZONE, RACK, ABSENT_KEY]))}
    selector = draw(_selector())
    if selector is not None:
        term["labelSelector"] = selector
    if draw(st.booleans()):
        term["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), max_size=2, unique=True))
    if draw(st.integers(0, 3)) == 0:
        term["namespaceSelector"] = draw(st.sampled_from([{}, {"matchLabels": {"team": "x"}}]))
    if weight:
        return {"weight": draw(st.integers(1, 100)), "podAffinityTerm": term}
    return term


@st.composite
def _affinity(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    affinity: dict[str, Any] = {}
    for kind in ("podAntiAffinity", "podAffinity"):
        block: dict[str, Any] = {}
        required = draw(st.lists(_term(), max_size=3 if kind == "podAntiAffinity" else 1))
        if required:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = required
        preferred = draw(st.lists(_term(weight=True), max_size=1))
        if preferred:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
        if block:
            affinity[kind] = block
    return affinity or None


@st.composite
def _state(draw: st.DrawFn) -> ClusterSnapshot:
    """Nodes in two zones (one without a zone), some in racks; namespaces with and without
    the ``team=x`` label; pods with random labels and affinity, some finished, names reused
    across namespaces."""
    items: list[dict[str, Any]] = [
        namespace("shop", labels={"team": "x"}),
        namespace("data", labels={"team": "y"}),
        namespace("ops"),
    ]
    nodes = draw(st.integers(2, 5))
    for index in range(nodes):
        labels = {HOST: f"n{index}"}
        zone = draw(st.sampled_from(["z1", "z2", None]))
        if zone is not None:
            labels[ZONE] = zone
        if draw(st.booleans()):
            labels[RACK] = draw(st.sampled_from(["r1", "r2"]))
        items.append(node(f"n{index}", labels=labels, cpu="64", memory="256Gi"))
    for index in range(draw(st.integers(1, 10))):
        space = draw(st.sampled_from(NAMESPACES))
        items.append(
            pod(
                f"p{draw(st.integers(0, 5))}",
                f"n{draw(st.integers(0, nodes - 1))}",
                namespace=space,
                uid=f"uid-{index}",
                labels=draw(_labels),
                affinity=draw(_affinity()),
                phase=draw(st.sampled_from(["Running", "Running", "Running", "Succeeded"])),
                owner=owner_ref("ReplicaSet", f"rs-{index % 3}"),
            )
        )
    return snapshot(*items)


def _unfinished(state: ClusterSnapshot) -> list[PodInfo]:
    return [
        p for name in sorted(state.nodes) for p in state.pods_on(name) if p.phase not in FINISHED
    ]


# -- the pairwise reading, as upstream writes it -------------------------------------------


def _same_domain(first: NodeInfo, second: NodeInfo, key: str) -> bool:
    if first.name == second.name:
        return True
    value = first.labels.get(key)
    return value is not None and second.labels.get(key) == value


def _pairwise_violation(
    candidate: PodInfo, nodes: Mapping[str, NodeInfo], by_namespace: Mapping[str, list[PodInfo]]
) -> PodInfo | None:
    """``CheckPodsWithAntiAffinityExist``: term by term, namespace by namespace, pod by pod."""
    here = nodes.get(candidate.node_name)
    anti = (candidate.affinity or {}).get("podAntiAffinity") or {}
    if here is None:
        return None
    for raw in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        try:
            term = affinity_term(raw, candidate.namespace)
        except SelectorError:
            return None
        for space in sorted(term.namespaces):
            for other in by_namespace.get(space, ()):
                if other.name == candidate.name or not term.selects(other.namespace, other.labels):
                    continue
                there = nodes.get(other.node_name)
                if there is not None and _same_domain(here, there, term.topology_key):
                    return other
    return None


def _pairwise_node_fit_forbids(
    moving: PodInfo, target: NodeInfo, on_node: Iterable[PodInfo]
) -> bool:
    """``podMatchesInterPodAntiAffinity``: the moving pod's terms against the node's pods."""
    if not has_required_anti_affinity(moving):
        return False
    try:
        terms = anti_affinity_terms(moving)
    except SelectorError:
        return True
    for term in terms:
        for other in on_node:
            if other.name == moving.name or other.phase in FINISHED:
                continue
            if term.selects(other.namespace, other.labels) and term.topology_key in target.labels:
                return True
    return False


def _pairwise_scheduler_rejects(
    incoming: PodInfo, target: NodeInfo, nodes: Mapping[str, NodeInfo], placed: Sequence[PodInfo]
) -> bool:
    """The scheduler's anti-affinity filter, pod in place by pod in place: the incoming pod's
    terms against each of them, then each one's terms against the incoming pod."""
    try:
        own = anti_affinity_terms(incoming) if has_required_anti_affinity(incoming) else ()
    except SelectorError:
        return True
    others = [
        p
        for p in placed
        if p.uid != incoming.uid and p.phase not in FINISHED and p.node_name in nodes
    ]
    for term in own:
        value = target.labels.get(term.topology_key)
        if value is None:
            continue
        for other in others:
            there = nodes[other.node_name]
            if there.labels.get(term.topology_key) == value and term.selects(
                other.namespace, other.labels
            ):
                return True
    for other in others:
        there = nodes[other.node_name]
        try:
            terms = anti_affinity_terms(other)
        except SelectorError:
            continue
        for term in terms:
            value = target.labels.get(term.topology_key)
            if (
                value is not None
                and there.labels.get(term.topology_key) == value
                and term.selects(incoming.namespace, incoming.labels)
            ):
                return True
    return False


def _pairwise_affinity_scores(
    sim: Simulation, incoming: PodInfo, targets: Sequence[NodeInfo], hard_weight: int
) -> list[int]:
    """InterPodAffinity's PreScore and Score, pod in place by pod in place."""
    namespaces = sim.snapshot.namespaces
    own = _resolved(affinity_terms(incoming), namespaces)
    namespace_labels = namespaces.get(incoming.namespace, {})
    topology: dict[str, Counter[str]] = defaultdict(Counter)
    for existing in sim.pods():
        if existing.phase in FINISHED or existing.uid == incoming.uid:
            continue
        where = sim.snapshot.nodes[existing.node_name]
        theirs = affinity_terms(existing)
        for terms, target, labels, factor in (
            (own.preferred_affinity, existing, {}, 1),
            (own.preferred_anti_affinity, existing, {}, -1),
            (theirs.required_affinity, incoming, namespace_labels, 0),
            (theirs.preferred_affinity, incoming, namespace_labels, 1),
            (theirs.preferred_anti_affinity, incoming, namespace_labels, -1),
        ):
            for term in terms:
                value = where.labels.get(term.topology_key)
                if value is not None and term.matches(target, labels):
                    topology[term.topology_key][value] += (
                        factor * term.weight if factor else hard_weight
                    )
    raws = [
        sum(counts.get(n.labels[key], 0) for key, counts in topology.items() if key in n.labels)
        for n in targets
    ]
    return affinity_normalize(raws)


# -- the rules, index against pairwise --------------------------------------------------


@given(_state(), st.randoms(use_true_random=False))
@settings(max_examples=50, deadline=None, derandomize=True)
def test_violations_match_the_pairwise_check_as_pods_leave(
    state: ClusterSnapshot, random: Any
) -> None:
    """For every pod, the index finds the same violating pod (the same one first) as upstream's
    pod-by-pod scan; and still after each of a random sequence of pods leaves both."""
    nodes = dict(state.nodes)
    pods = _unfinished(state)
    by_namespace: dict[str, list[PodInfo]] = defaultdict(list)
    index = PodIndex(nodes)
    slots: dict[int, Slot] = {}
    for each in pods:
        by_namespace[each.namespace].append(each)
        slots[id(each)] = index.add(each)
    leaving = random.sample(pods, random.randint(0, len(pods)))
    for step in range(len(leaving) + 1):
        for candidate in pods:
            assert violation(candidate, index) is _pairwise_violation(
                candidate, nodes, by_namespace
            )
        if step < len(leaving):
            gone = leaving[step]
            by_namespace[gone.namespace].remove(gone)
            index.remove(slots[id(gone)])


@given(_state())
@settings(max_examples=50, deadline=None, derandomize=True)
def test_node_fit_matches_the_pairwise_check(state: ClusterSnapshot) -> None:
    """Upstream's node fit, anti-affinity part: the index forbids exactly the (pod, node)
    pairs that reading the node's pods one by one forbids."""
    index = PodIndex(state.nodes, _unfinished(state))
    fit = NodeFitAntiAffinity(index)
    for moving in _unfinished(state):
        for target in state.nodes.values():
            assert fit.forbidden(moving, target) is _pairwise_node_fit_forbids(
                moving, target, state.pods_on(target.name)
            )


@st.composite
def _moves(draw: st.DrawFn, state: ClusterSnapshot) -> list[tuple[str, str, str]]:
    """Evictions, replacements landing, and the last replacement taken off again."""
    names = [p.uid for p in _unfinished(state)]
    moves = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["evict", "land", "unland"]))
        if not names:
            break
        moves.append((kind, draw(st.sampled_from(names)), f"n{draw(st.integers(0, 4))}"))
    return moves


def _replay(sim: Simulation, state: ClusterSnapshot, moves: list[tuple[str, str, str]]) -> None:
    by_uid = {p.uid: p for p in _unfinished(state)}
    landed: list[PodInfo] = []
    for kind, uid, where in moves:
        moving = by_uid[uid]
        if kind == "evict":
            sim.evict(moving)
        elif kind == "land" and where in state.nodes:
            sim.land(moving, where)
            landed.append(moving)
        elif kind == "unland" and landed:
            sim.unland(landed.pop())


@given(st.data())
@settings(max_examples=50, deadline=None, derandomize=True)
def test_the_scheduler_filter_matches_the_pairwise_check_move_after_move(
    data: st.DataObject,
) -> None:
    """The scheduler's anti-affinity filter in the offline plan (the incoming pod's terms over
    whole domains, and the terms of every pod in place), read from the index after evictions
    and replacements, refuses exactly the nodes the pairwise reading refuses; for pods gone
    and pods still in place alike."""
    state = data.draw(_state())
    sim = Simulation(state)
    _replay(sim, state, data.draw(_moves(state)))
    placed = list(sim.pods())
    for incoming in _unfinished(state):
        forbidden = forbidden_domains(
            incoming,
            sim.pod_index,
            sim.anti_affinity_terms,
            excluding=sim.slots_of(incoming.uid),
        )
        for target in state.nodes.values():
            assert (forbidden.rejection(target) is not None) is _pairwise_scheduler_rejects(
                incoming, target, state.nodes, placed
            )


@given(st.data(), st.sampled_from([0, 1, 5]))
@settings(max_examples=50, deadline=None, derandomize=True)
def test_interpodaffinity_scores_match_the_pairwise_scores_move_after_move(
    data: st.DataObject, hard_weight: int
) -> None:
    """InterPodAffinity's scores (the incoming pod's preferred terms, and the required and
    preferred terms of the pods in place, namespaceSelector included) read from the indexes
    equal the pod-by-pod sums, after evictions and replacements."""
    state = data.draw(_state())
    sim = Simulation(state)
    _replay(sim, state, data.draw(_moves(state)))
    for incoming in _unfinished(state):
        assert _affinity_scores(sim, incoming, sim.nodes, hard_weight) == (
            _pairwise_affinity_scores(sim, incoming, [n.info for n in sim.nodes], hard_weight)
        )


# -- how the work grows -------------------------------------------------------------------


def _hostile(pods: int, *, shared: bool) -> ClusterSnapshot:
    """``pods`` pods in one namespace on 50 nodes in 3 zones, each with 20 required
    anti-affinity terms. ``shared``: every pod carries ``app=web`` and its terms select
    ``app=web`` (one Deployment's replicas: equal terms, each selecting every pod);
    otherwise each pod's terms select 20 other pods by a label of their own, every tenth
    pod one on its own node."""
    items: list[dict[str, Any]] = [
        node(f"n{i:02d}", labels={HOST: f"n{i:02d}", ZONE: f"z{i % 3}"}, pods="250")
        for i in range(50)
    ]
    for i in range(pods):
        terms = []
        for k in range(1, 21):
            key = ZONE if k % 3 == 1 else HOST
            target = {"app": "web"} if shared else {"peer": f"p{(i + k) % pods}"}
            if not shared and k == 20 and i % 10 == 0:
                target, key = {"peer": f"p{(i + 50) % pods}"}, HOST
            terms.append({"topologyKey": key, "labelSelector": {"matchLabels": target}})
        items.append(
            pod(
                f"p{i}",
                f"n{i % 50:02d}",
                namespace="tenant",
                labels={"app": "web", "peer": f"p{i}"},
                affinity={
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}
                },
            )
        )
    return snapshot(*items)


def _cycle_work(state: ClusterSnapshot) -> int:
    """The index operations of the plugin's reading (every pod checked, each violator taken
    out as it goes) and of placing each violator's replacement as the offline plan does."""
    pods = _unfinished(state)
    index = PodIndex(state.nodes)
    slots = {id(each): index.add(each) for each in pods}
    sim = Simulation(state)
    for candidate in pods:
        if violation(candidate, index) is None:
            continue
        index.remove(slots[id(candidate)])
        sim.evict(candidate)
        placement = sim.pick(candidate)
        if placement.node is not None:
            sim.land(candidate, placement.node)
    return (
        index.operations
        + sim.pod_index.operations
        + sim.anti_affinity_terms.operations
        + sim.required_affinity.operations
        + sim.preferred_affinity.operations
        + sim.preferred_anti_affinity.operations
    )


@pytest.mark.parametrize("shared", [False, True], ids=["distinct-terms", "equal-terms"])
def test_the_work_of_a_cycle_grows_linearly_with_the_pods(shared: bool) -> None:
    """Doubling the pods (20 anti-affinity terms each) at most 2.3-folds the index's work for
    the plugin's cycle and the plan's placement: pods x terms, never pods x pods x terms (a
    pairwise check would quadruple it)."""
    work = [_cycle_work(_hostile(size, shared=shared)) for size in (150, 300, 600)]
    assert work[1] <= 2.3 * work[0], work
    assert work[2] <= 2.3 * work[1], work
