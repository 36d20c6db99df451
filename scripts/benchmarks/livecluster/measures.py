"""What the live benchmark computes from what it saw: pure functions over plain records.

Kept apart from the cluster so a unit test can pin each rule: which replacement belongs to
which eviction, when a replacement counts as back on the node it left, which evictions fall
in the run's last minute, when the cluster first looked balanced, and how the offline plan's
predictions compare with where the real scheduler put each replacement.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TERMINAL = ("Succeeded", "Failed")
MATCH_SLACK = 0.05
"""A creation seen up to this much before its deletion still matches it: the watch can show
the ReplicaSet's new pod a moment before the old pod's deletionTimestamp."""


@dataclass(frozen=True)
class Deletion:
    t: float
    """Seconds since the descheduler started."""
    pod: str
    uid: str
    node: str | None
    owner: str | None


@dataclass(frozen=True)
class Creation:
    t: float
    pod: str
    uid: str
    owner: str | None


@dataclass(frozen=True)
class PodState:
    """What utilization needs of a pod."""

    node: str | None
    cpu_milli: int
    phase: str | None = "Running"
    deleting: bool = False


def cpu_milli(quantity: Any) -> int:
    """A cpu quantity as millicores (``"250m"``, ``"2"``, ``0.5``)."""
    if quantity is None:
        return 0
    text = str(quantity)
    if text.endswith("m"):
        return int(float(text[:-1]))
    return round(float(text) * 1000)


def pod_cpu_milli(pod: Mapping[str, Any]) -> int:
    """The pod's cpu requests, summed over its containers (the benchmark's pods have no init
    containers or pod-level requests)."""
    return sum(
        cpu_milli(((c.get("resources") or {}).get("requests") or {}).get("cpu"))
        for c in pod.get("spec", {}).get("containers", [])
    )


def controller_of(pod: Mapping[str, Any]) -> str | None:
    """``namespace/Kind/name`` of the pod's controller (its ReplicaSet), if any."""
    meta = pod["metadata"]
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{meta['namespace']}/{ref['kind']}/{ref['name']}"
    return None


def deployment_of(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of the pod's Deployment: its ReplicaSet's name less the pod's
    ``pod-template-hash`` (the name of the pod's controller, or of the pod, without one)."""
    meta = pod["metadata"]
    namespace = meta.get("namespace", "")
    for ref in meta.get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        name = str(ref.get("name", ""))
        suffix = "-" + str((meta.get("labels") or {}).get("pod-template-hash", ""))
        if ref.get("kind") == "ReplicaSet" and len(suffix) > 1 and name.endswith(suffix):
            name = name[: -len(suffix)]
        return f"{namespace}/{name}"
    return f"{namespace}/{meta.get('name', '')}"


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = (pod.get("status") or {}).get("conditions") or []
    for condition in conditions:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    return _condition(pod, "Ready") is not None and not pod["metadata"].get("deletionTimestamp")


EVICTION_REASON = "EvictionByEvictionAPI"
"""The reason of the ``DisruptionTarget`` condition the API server puts on a pod it evicts
(before it sets the deletion timestamp): an eviction, as opposed to a plain delete."""


def is_evicted(pod: Mapping[str, Any]) -> bool:
    condition = _condition(pod, "DisruptionTarget")
    return condition is not None and condition.get("reason") == EVICTION_REASON


def cpu_percent(pods: Iterable[PodState], capacity: Mapping[str, int]) -> dict[str, float]:
    """Each node's cpu requests as a percentage of its allocatable; a terminating or finished
    pod no longer counts (its node is free of it for the scheduler too)."""
    used = dict.fromkeys(capacity, 0)
    for pod in pods:
        if pod.node in used and not pod.deleting and pod.phase not in TERMINAL:
            used[pod.node] += pod.cpu_milli
    return {node: 100.0 * used[node] / capacity[node] for node in capacity}


@dataclass(frozen=True)
class Spread:
    """One look at the nodes' cpu requests."""

    over: int
    """Nodes above the high threshold."""
    under: int
    """Nodes below the low threshold (empty ones included)."""
    under_occupied: int
    """Nodes below the low threshold that still hold a pod (what compaction empties)."""
    empty: int
    stddev: float
    hottest: float
    coldest: float


def spread(percent: Mapping[str, float], low: float, high: float) -> Spread:
    values = list(percent.values()) or [0.0]
    return Spread(
        over=sum(1 for v in values if v > high),
        under=sum(1 for v in values if v < low),
        under_occupied=sum(1 for v in values if 0 < v < low),
        empty=sum(1 for v in values if v == 0),
        stddev=statistics.pstdev(values),
        hottest=max(values),
        coldest=min(values),
    )


def first_time(samples: Sequence[tuple[float, int]]) -> float | None:
    """The first sample time at which the count is zero (``None``: never)."""
    for t, count in samples:
        if count == 0:
            return t
    return None


def match_replacements(
    deletions: Sequence[Deletion], creations: Sequence[Creation]
) -> dict[str, Creation]:
    """Deletion uid -> its replacement: per owner, in time order, each deletion takes the
    earliest pod of the same owner created after it (less ``MATCH_SLACK``) not yet taken."""
    by_owner: dict[str | None, list[Creation]] = {}
    for creation in sorted(creations, key=lambda c: c.t):
        by_owner.setdefault(creation.owner, []).append(creation)
    taken: set[str] = set()
    matched: dict[str, Creation] = {}
    for deletion in sorted(deletions, key=lambda d: d.t):
        if deletion.owner is None:
            continue
        for creation in by_owner.get(deletion.owner, []):
            if creation.uid not in taken and creation.t >= deletion.t - MATCH_SLACK:
                taken.add(creation.uid)
                matched[deletion.uid] = creation
                break
    return matched


def same_node_returns(
    deletions: Sequence[Deletion],
    matched: Mapping[str, Creation],
    bound: Mapping[str, str],
    window: float = 10.0,
) -> int:
    """Evictions whose replacement, created within ``window`` s, was bound to the very node
    the evicted pod left: an eviction that moved nothing."""
    count = 0
    for deletion in deletions:
        creation = matched.get(deletion.uid)
        if (
            creation is not None
            and creation.t - deletion.t <= window
            and deletion.node is not None
            and bound.get(creation.uid) == deletion.node
        ):
            count += 1
    return count


def evictions_between(deletions: Sequence[Deletion], start: float, end: float) -> int:
    """Evictions in ``(start, end]`` seconds of the run (e.g. its last 60 s)."""
    return sum(1 for d in deletions if start < d.t <= end)


def candidates_of(entry: Mapping[str, Any]) -> list[str]:
    """The nodes a plan entry predicts for the pod's replacement: ``destinationCandidates``,
    else its single ``destination``, else none."""
    candidates = entry.get("destinationCandidates")
    if isinstance(candidates, list):
        return [str(c) for c in candidates]
    destination = entry.get("destination")
    return [str(destination)] if destination else []


@dataclass
class PlanOutcome:
    planned: int = 0
    allowed: int = 0
    """Planned evictions not blocked by a budget when planned."""
    evicted: int = 0
    """Planned pods that were evicted in the live run (by whichever descheduler)."""
    placed: int = 0
    """Of those, how many had a replacement bound to some node."""
    predicted: int = 0
    """Of those placed, how many the plan gave a node for (a pod the plan held back as
    blocked by a budget has none, yet a descheduler may evict it once the budget allows)."""
    on_destination: int = 0
    on_candidates: int = 0
    """Replacements on the candidates of the eviction ``match_replacements`` paired them with
    (the first replacement of the owner created after the deletion): strict, since one
    owner's replacements are interchangeable and come in their own order."""
    on_candidates_by_owner: int = 0
    """The most replacements on a candidate set over every pairing of one owner's evictions
    with its replacements (a maximum bipartite matching per owner): the pods of a ReplicaSet
    are alike, so which replacement "belongs" to which eviction is the ReplicaSet's choice,
    not the plan's."""
    candidates_field: bool = False
    """Whether the plan carried ``destinationCandidates`` (else ``[destination]`` stood in)."""
    candidate_sizes: list[int] = field(default_factory=list)
    nodes: int = 0
    refused_evicted: int = 0
    """Evicted live, though the plan refused them (a budget, a utilization plugin: not sent
    in the planned cycle): a later cycle's decision, not this plan's, so not counted above."""

    @property
    def candidate_share(self) -> float | None:
        """Replacements on one of the plan's candidates, of those placed (%)."""
        return 100.0 * self.on_candidates / self.placed if self.placed else None

    @property
    def owner_candidate_share(self) -> float | None:
        """Replacements on a candidate, paired per owner at best, of those placed (%)."""
        return 100.0 * self.on_candidates_by_owner / self.placed if self.placed else None

    @property
    def destination_share(self) -> float | None:
        return 100.0 * self.on_destination / self.placed if self.placed else None

    @property
    def mean_candidates_share(self) -> float | None:
        """The mean candidate set's size as a share of the nodes (%)."""
        if not self.candidate_sizes or not self.nodes:
            return None
        return 100.0 * statistics.fmean(self.candidate_sizes) / self.nodes


def plan_outcome(
    plan: Sequence[Mapping[str, Any]],
    deletions: Sequence[Deletion],
    matched: Mapping[str, Creation],
    bound: Mapping[str, str],
    nodes: int,
) -> PlanOutcome:
    """For each planned eviction that happened, whether its replacement landed on the plan's
    ``destination`` and on one of its candidates (the candidate sizes of those, too)."""
    deleted = {d.pod: d for d in deletions}
    outcome = PlanOutcome(planned=len(plan), nodes=nodes)
    by_owner: dict[str | None, tuple[list[list[str]], list[str]]] = {}
    for entry in plan:
        outcome.allowed += not entry.get("blockedByPDB")
        outcome.candidates_field |= isinstance(entry.get("destinationCandidates"), list)
        deletion = deleted.get(str(entry.get("pod")))
        if deletion is None:
            continue
        if entry.get("blockedByPDB") and entry.get("held") is False:
            outcome.refused_evicted += 1
            continue
        outcome.evicted += 1
        creation = matched.get(deletion.uid)
        landed = bound.get(creation.uid) if creation is not None else None
        if landed is None:
            continue
        candidates = candidates_of(entry)
        outcome.placed += 1
        outcome.predicted += bool(candidates)
        outcome.candidate_sizes.append(len(candidates))
        outcome.on_destination += landed == entry.get("destination")
        outcome.on_candidates += landed in candidates
        sets, nodes_landed = by_owner.setdefault(deletion.owner, ([], []))
        sets.append(candidates)
        nodes_landed.append(landed)
    outcome.on_candidates_by_owner = sum(
        matching_size(sets, landed) for sets, landed in by_owner.values()
    )
    return outcome


def matching_size(candidate_sets: Sequence[Sequence[str]], landed: Sequence[str]) -> int:
    """The maximum number of ``landed`` nodes (one per replacement) that can each be paired
    with a different candidate set containing it (Kuhn's augmenting paths; the sets of one
    owner are few)."""
    owner_of: dict[int, int] = {}
    """Replacement index -> the candidate set it is paired with."""

    def augment(index: int, seen: set[int]) -> bool:
        for replacement, node in enumerate(landed):
            if node in candidate_sets[index] and replacement not in seen:
                seen.add(replacement)
                if replacement not in owner_of or augment(owner_of[replacement], seen):
                    owner_of[replacement] = index
                    return True
        return False

    return sum(augment(index, set()) for index in range(len(candidate_sets)))


CYCLE_GAP = 5.0
"""Evictions this far apart belong to different cycles: the descheduling interval is 15 s,
and a cycle's evictions follow each other within a few seconds (or are held together)."""


@dataclass(frozen=True)
class Cycle:
    """One burst of evictions: a descheduling cycle, as seen from the pods."""

    t: float
    """When its first eviction was seen (s since the descheduler started)."""
    evictions: int
    nodes: tuple[str, ...]
    """The nodes evicted from, each once, sorted."""


def eviction_cycles(deletions: Sequence[Deletion], gap: float = CYCLE_GAP) -> list[Cycle]:
    """The evictions grouped into cycles: a new cycle starts after ``gap`` s without one."""
    cycles: list[list[Deletion]] = []
    for deletion in sorted(deletions, key=lambda d: d.t):
        if not cycles or deletion.t - cycles[-1][-1].t > gap:
            cycles.append([])
        cycles[-1].append(deletion)
    return [
        Cycle(
            t=round(group[0].t, 1),
            evictions=len(group),
            nodes=tuple(sorted({d.node for d in group if d.node})),
        )
        for group in cycles
    ]


USAGE_ERRORS = (
    "prometheus client not initialized",
    "error initializing usage client",
    "unable to capture prometheus metrics",
    "unable to find metric entry",
    "error getting node usage",
)
"""Upstream's words when it cannot read actual usage (each cycle then fails or evicts
nothing)."""


def log_findings(text: str, tail_lines: int = 4) -> dict[str, Any]:
    """What a descheduler's log says about usage: how many lines carry one of
    ``USAGE_ERRORS`` or mention Prometheus with an error, and its last lines (each cut to
    300 characters) for a run that ended on its own."""
    lines = [line for line in text.splitlines() if line.strip()]
    usage_errors = sum(1 for line in lines if any(e in line.lower() for e in USAGE_ERRORS))
    prometheus_errors = sum(
        1
        for line in lines
        if "prometheus" in line.lower() and ("error" in line.lower() or "fail" in line.lower())
    )
    return {
        "usage_errors": usage_errors,
        "prometheus_errors": prometheus_errors,
        "tail": [line[:300] for line in lines[-tail_lines:]],
    }
