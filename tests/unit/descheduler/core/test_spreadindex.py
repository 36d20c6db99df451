"""Topology spread counted through the pod index, against reading every node's pods.

The placement's PodTopologySpread filter (``scheduler_spread_counts``) and score
(``fullscore``) count, per node, the pods a constraint selects. They read those counts from
the simulation's pod index; the reference here reads each node's pods one by one, as the
scheduler's ``countPodsMatchSelector`` does: in the constraint's namespace, selected by its
``labelSelector`` and carrying the incoming pod's values of its ``matchLabelKeys``, neither
terminating nor finished. Both run on random clusters, after each move of a random sequence
of evictions and placements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.descheduler.core.placement.scoring import spread_scoring
from agent.descheduler.core.placement.simulation import Simulation
from agent.descheduler.core.rules.topology import (
    SpreadCounts,
    raw_spread_constraints,
    scheduler_spread_counts,
    spread_constraint,
)
from agent.descheduler.model.cluster import ClusterSnapshot, NodeInfo, PodInfo
from agent.kubesemantics.labelselector import from_label_selector, matches
from agent.kubesemantics.wellknown import (
    DO_NOT_SCHEDULE,
    FINISHED_PHASES,
    HOSTNAME_LABEL,
    SCHEDULE_ANYWAY,
    ZONE_LABEL,
)
from tests.harness.deschedulerstate import node, pod, snapshot
from tests.harness.kubeobjects import namespace, owner_ref

RACK = "example.com/rack"
"""A topology key only some nodes carry."""
NAMESPACES = ("shop", "data")
KEYS = ("app", "tier")
VALUES = ("a", "b")
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}

# -- random states ------------------------------------------------------------------------

_labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
LABEL_SETS: tuple[dict[str, str], ...] = (
    {},
    {"app": "a"},
    {"app": "a", "tier": "a"},
    {"app": "b", "tier": "b"},
    {"tier": "b"},
    {"app": "a", "tier": "b"},
)
"""Pods' labels, by their index shifted by a draw: the pods of one state differ (a drawn
dictionary tends to repeat the simplest one)."""


def _varied_labels(draw: st.DrawFn, index: int) -> dict[str, str]:
    return LABEL_SETS[(index + draw(st.integers(0, len(LABEL_SETS) - 1))) % len(LABEL_SETS)]


@st.composite
def _selector(draw: st.DrawFn) -> dict[str, Any] | None:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return None  # selects no pod
    if kind == 1:
        return {}  # selects every pod of the namespace
    selector: dict[str, Any] = {}
    if match_labels := draw(_labels):
        selector["matchLabels"] = match_labels
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", None]))
    if operator is not None:
        requirement: dict[str, Any] = {"key": draw(st.sampled_from(KEYS)), "operator": operator}
        if operator in ("In", "NotIn"):
            requirement["values"] = [draw(st.sampled_from(VALUES))]
        selector["matchExpressions"] = [requirement]
    return selector


@st.composite
def _constraint(draw: st.DrawFn) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "maxSkew": draw(st.integers(1, 3)),
        "topologyKey": draw(st.sampled_from([HOSTNAME_LABEL, ZONE_LABEL, ZONE_LABEL, RACK])),
        "whenUnsatisfiable": draw(st.sampled_from([DO_NOT_SCHEDULE, SCHEDULE_ANYWAY])),
    }
    if (selector := draw(_selector())) is not None:
        raw["labelSelector"] = selector
    if draw(st.booleans()):
        raw["matchLabelKeys"] = ["tier"]
    if draw(st.booleans()):
        raw["nodeTaintsPolicy"] = "Honor"
    return raw


@st.composite
def _state(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[PodInfo]]:
    """Nodes in two zones (one without a zone), some in a rack, some tainted; pods with
    random labels in two namespaces, some terminating, some finished; and pods to place,
    each with random spread constraints."""
    items: list[dict[str, Any]] = [namespace(name) for name in NAMESPACES]
    nodes = draw(st.integers(2, 5))
    for index in range(nodes):
        labels = {HOSTNAME_LABEL: f"n{index}"}
        if (zone := draw(st.sampled_from(["z1", "z2", None]))) is not None:
            labels[ZONE_LABEL] = zone
        if draw(st.booleans()):
            labels[RACK] = "r1"
        taints = [TAINT] if draw(st.integers(0, 3)) == 0 else []
        items.append(node(f"n{index}", labels=labels, taints=taints, cpu="64", memory="256Gi"))
    items += [
        pod(
            f"p{index}",
            f"n{draw(st.integers(0, nodes - 1))}",
            namespace=draw(st.sampled_from(NAMESPACES)),
            labels=_varied_labels(draw, index),
            phase=draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"])),
            deleting=draw(st.integers(0, 4)) == 0,
            owner=owner_ref("ReplicaSet", f"rs-{index % 3}"),
        )
        for index in range(draw(st.integers(0, 16)))
    ]
    placing = []
    for index in range(draw(st.integers(1, 3))):
        items.append(
            pod(
                f"new{index}",
                f"n{draw(st.integers(0, nodes - 1))}",
                namespace=draw(st.sampled_from(NAMESPACES)),
                labels=_varied_labels(draw, index + 2),
                owner=owner_ref("ReplicaSet", "new"),
                spec={"topologySpreadConstraints": draw(st.lists(_constraint(), max_size=3))},
            )
        )
        placing.append(f"new{index}")
    state = snapshot(*items)
    return state, [p for p in _all_pods(state) if p.name in placing]


def _all_pods(state: ClusterSnapshot) -> list[PodInfo]:
    return [p for name in sorted(state.nodes) for p in state.pods_on(name)]


# -- the reference: every node's pods, one by one ---------------------------------------------


def _counted(other: PodInfo) -> bool:
    """``countPodsMatchSelector``: neither terminating nor finished."""
    return not other.deleting and other.phase not in FINISHED_PHASES


def _selects(raw: Mapping[str, Any], owner: PodInfo) -> Callable[[PodInfo], bool]:
    """Which pods one of ``owner``'s constraints selects, read from the constraint as sent."""
    selector = from_label_selector(raw.get("labelSelector"))
    wanted = {
        key: owner.labels[key] for key in raw.get("matchLabelKeys") or () if key in owner.labels
    }

    def selects(other: PodInfo) -> bool:
        return (
            selector is not None
            and other.namespace == owner.namespace
            and matches(selector, other.labels)
            and all(other.labels.get(key) == value for key, value in wanted.items())
        )

    return selects


def _scanned_spread_counts(
    moving: PodInfo, nodes: Iterable[NodeInfo], pods_on: Callable[[str], Iterable[PodInfo]]
) -> tuple[SpreadCounts, ...]:
    """The PreFilter's counts, each included node's pods read one by one."""
    raws = [
        r for r in raw_spread_constraints(moving) if r.get("whenUnsatisfiable") == DO_NOT_SCHEDULE
    ]
    constraints = [(spread_constraint(raw, moving), _selects(raw, moving)) for raw in raws]
    keys = {constraint.topology_key for constraint, _ in constraints}
    counting = [n for n in nodes if all(key in n.labels for key in keys)]
    result = []
    for constraint, selects in constraints:
        counts: dict[str, int] = {}
        for each in counting:
            if constraint.includes(each):
                value = each.labels[constraint.topology_key]
                found = sum(1 for other in pods_on(each.name) if _counted(other) and selects(other))
                counts[value] = counts.get(value, 0) + found
        least = min(counts.values(), default=0)
        result.append(SpreadCounts(constraint, counts, least, constraint.selects(moving)))
    return tuple(result)


def _scanned_node_counts(sim: Simulation, selects: Callable[[PodInfo], bool]) -> Counter[str]:
    return Counter(other.node_name for other in sim.pods() if _counted(other) and selects(other))


def _check(sim: Simulation, placing: list[PodInfo]) -> None:
    nodes = sim.snapshot.nodes
    for moving in placing:
        assert scheduler_spread_counts(moving, nodes.values(), sim.pod_index) == (
            _scanned_spread_counts(moving, nodes.values(), sim.pods_on)
        )
        scoring = spread_scoring(moving)
        if scoring.selector_owner:
            continue
        own = [
            raw
            for raw in raw_spread_constraints(moving)
            if raw.get("whenUnsatisfiable") == SCHEDULE_ANYWAY
        ]
        for constraint, raw in zip(scoring.constraints, own, strict=True):
            counted = sim.pod_index.running_node_counts(constraint.namespace, constraint.selector)
            assert +counted == _scanned_node_counts(sim, _selects(raw, moving))


@given(_state(), st.randoms(use_true_random=False))
@settings(max_examples=80, deadline=None, derandomize=True)
def test_spread_counts_through_the_index_match_reading_every_pod(
    generated: tuple[ClusterSnapshot, list[PodInfo]], random: Any
) -> None:
    """The filter's per-domain counts and the score's per-node counts of each pod's spread
    constraints are the same read through the index as read pod by pod, and stay so as a
    random sequence of evictions, placements and their undoing moves the pods."""
    state, placing = generated
    sim = Simulation(state)
    _check(sim, placing)
    in_place = [p for p in _all_pods(state) if p.name not in {m.name for m in placing}]
    landed: list[PodInfo] = []
    names = sorted(state.nodes)
    for _ in range(random.randint(1, 8)):
        move = random.randint(0, 2)
        if move == 0 and in_place:
            sim.evict(in_place.pop(random.randrange(len(in_place))))
        elif move == 1 and landed:
            sim.unland(landed.pop())
        else:
            chosen = random.choice([*placing, *in_place] or placing)
            sim.land(chosen, random.choice(names))
            landed.append(chosen)
        _check(sim, placing)
