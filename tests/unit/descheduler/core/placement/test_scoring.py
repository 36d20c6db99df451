"""kube-scheduler's default scoring, reproduced: each plugin's integer arithmetic and
normalization, and the totals of a real kube-scheduler replayed move by move."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.cache.snapshotfile import load_snapshot
from agent.descheduler.core.placement.fullscore import node_totals
from agent.descheduler.core.placement.scoring import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MB,
    affinity_normalize,
    affinity_terms,
    balanced_allocation,
    default_normalize,
    go_round,
    image_locality,
    intolerable_taints,
    least_allocated,
    nonzero_size,
    normalized_image_name,
    prefer_no_schedule_tolerations,
    scheduler_term,
    spread_normalize,
    spread_raw,
    spread_scoring,
    topology_weight,
)
from agent.descheduler.core.placement.simulation import Simulation
from agent.descheduler.model.cluster import PodInfo
from agent.kubesemantics.wellknown import HOSTNAME_LABEL, ZONE_LABEL
from tests.harness.deschedulerstate import pod
from tests.harness.kubeobjects import owner_ref
from tests.harness.repository import DESCHEDULER_FIXTURES

GI = 1024**3


def _pod(**kwargs: Any) -> PodInfo:
    return project_pod(pod("p", "n1", **kwargs))


def test_least_allocated_averages_the_free_share_of_cpu_and_memory() -> None:
    """LeastAllocated: per resource ``(capacity - requested) * 100 // capacity``, then the
    integer mean; a resource without allocatable is left out, one over capacity scores 0."""
    assert least_allocated([250, 1 * GI], [1000, 4 * GI]) == 75
    assert least_allocated([333, 0], [1000, 1000]) == (66 + 100) // 2
    assert least_allocated([333, 5], [1000, 0]) == 66
    assert least_allocated([1500, 0], [1000, 1000]) == (0 + 100) // 2
    assert least_allocated([1, 1], [0, 0]) == 0


def test_balanced_allocation_is_one_minus_the_spread_of_the_used_fractions() -> None:
    """BalancedAllocation: two resources score ``(1 - |f_cpu - f_mem| / 2) * 100``,
    truncated, each fraction capped at 1."""
    assert balanced_allocation([500, 2 * GI], [1000, 4 * GI]) == 100
    assert balanced_allocation([800, 1 * GI], [1000, 4 * GI]) == 72  # 1 - 0.55/2
    assert balanced_allocation([3000, 4 * GI], [1000, 4 * GI]) == 100  # both capped at 1
    assert balanced_allocation([1, 2, 3], [0, 4, 0]) == 100  # one fraction: no spread


def test_a_pod_without_requests_scores_as_the_scheduler_defaults() -> None:
    """Scores count a pod asking no cpu or memory as 100m and 200Mi."""
    assert nonzero_size(_pod(cpu=None, memory=None)) == (
        DEFAULT_MILLI_CPU_REQUEST,
        DEFAULT_MEMORY_REQUEST,
    )
    assert nonzero_size(_pod(cpu="250m", memory=None)) == (250, 200 * MB)


def test_default_normalize_scales_to_the_best_and_reverses_for_taints() -> None:
    """DefaultNormalizeScore: ``100 * raw // max``; reversed (fewest taints best) it is
    ``100 - that``, and all-zero raws score 100 reversed, 0 otherwise."""
    assert default_normalize([0, 1, 3], reverse=False) == [0, 33, 100]
    assert default_normalize([0, 1, 3], reverse=True) == [100, 67, 0]
    assert default_normalize([0, 0], reverse=True) == [100, 100]
    assert default_normalize([0, 0], reverse=False) == [0, 0]


def test_spread_normalize_prefers_the_fewest_matching_pods() -> None:
    """PodTopologySpread: ``100 * (max + min - raw) // max``; an ignored node scores 0 and
    all-zero raws score 100."""
    assert spread_normalize([None, 2, 5, 3]) == [0, 100, 40, 80]
    assert spread_normalize([0, 0, None]) == [100, 100, 0]
    assert spread_normalize([None]) == [0]


def test_affinity_normalize_is_min_max_truncated() -> None:
    """InterPodAffinity: ``int(100 * (raw - min) / (max - min))``; equal raws score 0."""
    assert affinity_normalize([-2, 0, 6]) == [0, 25, 100]
    assert affinity_normalize([-1, 0, 1]) == [0, 50, 100]
    assert affinity_normalize([4, 4]) == [0, 0]


def test_spread_raw_weights_each_domain_by_the_log_of_the_domain_count() -> None:
    """A node's raw spread score sums, per constraint whose key it has, ``count * log(domains
    + 2) + maxSkew - 1``, rounded half away from zero as Go rounds."""
    assert topology_weight(3) == math.log(5)
    weights = [topology_weight(3), topology_weight(2)]
    assert spread_raw([2, None], [3, 5], weights) == go_round(2 * math.log(5) + 2) == 5
    assert spread_raw([2, 1], [3, 5], weights) == go_round(2 * math.log(5) + 2 + math.log(4) + 4)
    assert go_round(2.5) == 3
    assert go_round(3.4999) == 3


def test_image_locality_scales_by_how_many_nodes_hold_the_image() -> None:
    """ImageLocality: image size times the share of nodes holding it, clamped to 23 MB..1000
    MB per container, mapped onto 0..100; an untagged image is ``:latest``."""
    images = {"app:latest": 500 * MB}
    assert image_locality(images, ["app"], {"app:latest": 2}, 4) == (250 - 23) * 100 // 977
    assert image_locality(images, ["app:latest"], {"app:latest": 4}, 4) == (500 - 23) * 100 // 977
    assert image_locality({}, ["app"], {}, 4) == 0
    assert image_locality({"big:1": 5000 * MB}, ["big:1"], {"big:1": 1}, 1) == 100
    assert normalized_image_name("registry:5000/app") == "registry:5000/app:latest"
    assert normalized_image_name("app:1") == "app:1"


def test_only_prefer_no_schedule_taints_the_pod_does_not_tolerate_count() -> None:
    """TaintToleration scores count PreferNoSchedule taints not tolerated by a toleration
    with no effect or with PreferNoSchedule."""
    taints = [
        {"key": "a", "effect": "PreferNoSchedule"},
        {"key": "b", "effect": "PreferNoSchedule"},
        {"key": "c", "effect": "NoSchedule"},
    ]
    tolerating_a = _pod(tolerations=[{"key": "a", "operator": "Exists"}])
    tolerating_b_noschedule = _pod(
        tolerations=[{"key": "b", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert intolerable_taints(taints, prefer_no_schedule_tolerations(tolerating_a)) == 1
    assert intolerable_taints(taints, prefer_no_schedule_tolerations(tolerating_b_noschedule)) == 2


def test_spread_scoring_uses_the_system_defaults_only_without_own_constraints() -> None:
    """A ReplicaSet pod without constraints is scored by the system defaults (hostname skew
    3, zone skew 5, its controller's pods); one with constraints of its own by its
    ScheduleAnyway ones only; a pod of a Job by none."""
    defaults = spread_scoring(_pod(owner=owner_ref("ReplicaSet", "web")))
    assert [(c.topology_key, c.max_skew) for c in defaults.constraints] == [
        (HOSTNAME_LABEL, 3),
        (ZONE_LABEL, 5),
    ]
    assert not defaults.require_all_topologies
    hard_only = _pod(
        spec={
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE_LABEL,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        }
    )
    assert spread_scoring(hard_only).constraints == ()
    assert spread_scoring(_pod(owner=owner_ref("Job", "batch"))).constraints == ()


def test_an_affinity_term_without_namespaces_means_the_pods_own() -> None:
    """``newAffinityTerm``: no namespaces and no namespaceSelector is the pod's namespace;
    ``namespaceSelector: {}`` is every namespace."""
    owner = _pod(namespace="shop")
    own = scheduler_term({"labelSelector": {"matchLabels": {"a": "b"}}}, owner)
    assert own.namespaces == frozenset({"shop"})
    assert own.matches(_pod(namespace="shop", labels={"a": "b"}), {})
    assert not own.matches(_pod(namespace="other", labels={"a": "b"}), {})
    every = scheduler_term({"namespaceSelector": {}, "labelSelector": {}}, owner)
    assert every.matches(_pod(namespace="other"), {"team": "x"})


def test_affinity_terms_with_a_bad_selector_score_nothing() -> None:
    """A pod whose affinity selector does not parse has no scoring terms (the scheduler
    skips such an existing pod; the projection refuses one where it enters: set after it)."""
    broken = msgspec.structs.replace(
        _pod(),
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": ZONE_LABEL,
                        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
                    }
                ]
            }
        },
    )
    assert not affinity_terms(broken).scores


def _replay() -> tuple[Any, list[dict[str, Any]]]:
    state = load_snapshot(DESCHEDULER_FIXTURES / "scheduler-replay-cluster.json.gz", now=0).snapshot
    steps = json.loads((DESCHEDULER_FIXTURES / "scheduler-replay-scores.json").read_text())["steps"]
    return state, steps


@pytest.mark.parametrize("fast", [True, False], ids=["rankings", "full-scan"])
def test_totals_match_a_real_kube_scheduler_move_by_move(fast: bool) -> None:
    """Replaying a recorded kube-scheduler (deletions one at a time, each replacement bound
    before the next): every filtered-in node's total equals the scheduler's logged total,
    and the predicted candidates (from the rankings and from the full scan alike) are
    exactly the nodes tied at its best, the bound node among them. The evicted pod's own
    node is left out: the scheduler may still count the terminating pod's requests there,
    and the plan never sends a pod back to the node it evicts it from."""
    state, steps = _replay()
    simulation = Simulation(state, fast=fast)
    pods = {f"{p.namespace}/{p.name}": p for pods in state.pods_by_node.values() for p in pods}
    for step in steps:
        evicted = pods[step["evicted"]]
        simulation.evict(evicted)
        theirs: dict[str, int] = step["scores"]
        names = sorted(theirs)
        totals = node_totals(simulation, evicted, [simulation.index[n] for n in names])
        ours = dict(zip(names, totals, strict=True))
        others = {n for n in names if n != evicted.node_name}
        assert {n: ours[n] for n in others} == {n: theirs[n] for n in others}, step["evicted"]
        best = max(theirs[n] for n in others)
        placement = simulation.pick(evicted)
        assert set(placement.candidates) == {n for n in others if theirs[n] == best}
        assert step["bound"] in placement.candidates
        simulation.land(evicted, step["bound"])
