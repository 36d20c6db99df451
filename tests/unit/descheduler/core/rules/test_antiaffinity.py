"""Required pod anti-affinity over the snapshot: violations in place, and node fit."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agent.descheduler.cache.projection import project_node, project_pod
from agent.descheduler.core.rules.antiaffinity import (
    NodeFitAntiAffinity,
    anti_affinity_terms,
    forbidden_domains,
    violation,
)
from agent.descheduler.core.rules.existingterms import ExistingTerms
from agent.descheduler.core.rules.podindex import PodIndex
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.podaffinity import AffinityTerm
from tests.harness.deschedulerstate import node, pod


def anti(key: str = "kubernetes.io/hostname", **selector: str) -> dict[str, Any]:
    """A required anti-affinity against pods labelled ``selector`` (default ``app=web``)."""
    labels = selector or {"app": "web"}
    term = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


NODES = {
    n.name: n
    for n in (
        project_node(node("n1", labels={"zone": "a", "kubernetes.io/hostname": "n1"})),
        project_node(node("n2", labels={"zone": "a", "kubernetes.io/hostname": "n2"})),
        project_node(node("n3", labels={"zone": "b", "kubernetes.io/hostname": "n3"})),
    )
}


def _index(*pods: PodInfo) -> PodIndex:
    return PodIndex(NODES, pods)


def _forbidden_by_pods_on(moving: PodInfo, target: NodeInfo, pods: list[PodInfo]) -> bool:
    """Node fit over just ``pods`` (finished ones are never indexed, as the cycle's are not)."""
    index = PodIndex(NODES, [p for p in pods if p.phase not in ("Succeeded", "Failed")])
    return NodeFitAntiAffinity(index).forbidden(moving, target)


def _web(name: str, node_name: str, **kwargs: Any) -> PodInfo:
    kwargs.setdefault("labels", {"app": "web"})
    return project_pod(pod(name, node_name, **kwargs))


@pytest.mark.parametrize(
    ("affinity", "other_node", "other_kwargs", "violated"),
    [
        pytest.param(anti(), "n1", {}, True, id="same-node"),
        pytest.param(anti(), "n2", {}, False, id="other-node-hostname-key"),
        pytest.param(anti("zone"), "n2", {}, True, id="same-zone"),
        pytest.param(anti("zone"), "n3", {}, False, id="other-zone"),
        pytest.param(anti(), "n1", {"labels": {"app": "db"}}, False, id="labels-differ"),
        pytest.param(anti(), "n1", {"namespace": "other"}, False, id="other-namespace"),
        pytest.param(anti(), "gone", {}, False, id="other-pod-on-unknown-node"),
        pytest.param(None, "n1", {}, False, id="no-anti-affinity"),
    ],
)
def test_violation_in_place(
    affinity: dict[str, Any] | None, other_node: str, other_kwargs: dict[str, Any], violated: bool
) -> None:
    """A pod on n1 violates its anti-affinity when a pod it selects runs in its domain."""
    candidate = _web("candidate", "n1", affinity=affinity)
    other = _web("other", other_node, **other_kwargs)
    found = violation(candidate, _index(candidate, other))
    assert (found is other) if violated else found is None


def test_a_pod_never_violates_its_own_anti_affinity() -> None:
    """The candidate matching its own selector is no violation (upstream skips it by name)."""
    candidate = _web("candidate", "n1", affinity=anti())
    assert violation(candidate, _index(candidate)) is None


def test_broken_selector_is_no_violation_but_no_fit() -> None:
    """A term that does not parse reports no violation in place, and no node fits the pod.

    (The projection refuses such a term where it enters; the rule still copes with one.)"""
    broken = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b c"}}}
            ]
        }
    }
    candidate = msgspec.structs.replace(_web("candidate", "n1"), affinity=broken)
    other = _web("other", "n1")
    assert violation(candidate, _index(candidate, other)) is None
    assert _forbidden_by_pods_on(candidate, NODES["n2"], [])


@pytest.mark.parametrize(
    ("target", "key", "others", "forbidden"),
    [
        pytest.param(NODES["n2"], "kubernetes.io/hostname", ["n2"], True, id="selected-pod-there"),
        pytest.param(NODES["n2"], "kubernetes.io/hostname", [], False, id="empty-node"),
        pytest.param(NODES["n2"], "rack", ["n2"], False, id="node-lacks-the-key"),
        pytest.param(NODES["n2"], "zone", ["n2"], True, id="zone-key-pod-on-the-node"),
    ],
)
def test_node_fit_reads_only_the_pods_on_the_node(
    target: NodeInfo, key: str, others: list[str], forbidden: bool
) -> None:
    """Upstream's node fit: the pod's terms against the pods on that node, when the node
    carries the term's key."""
    moving = _web("moving", "n1", affinity=anti(key))
    on_node = [_web(f"o-{n}", n) for n in others]
    assert _forbidden_by_pods_on(moving, target, on_node) is forbidden


def test_node_fit_ignores_finished_pods() -> None:
    """A Succeeded pod on the node no longer keeps the moving pod away."""
    moving = _web("moving", "n1", affinity=anti())
    done = _web("done", "n2", phase="Succeeded")
    assert not _forbidden_by_pods_on(moving, NODES["n2"], [done])


@pytest.mark.parametrize(
    ("moving_affinity", "placed", "target", "rejected"),
    [
        pytest.param(anti("zone"), [("o", "n1", {})], "n2", True, id="own-term-whole-zone"),
        pytest.param(anti("zone"), [("o", "n1", {})], "n3", False, id="own-term-other-zone"),
        pytest.param(anti(), [("o", "n1", {})], "n2", False, id="own-term-hostname-other-node"),
        pytest.param(
            None,
            [("o", "n1", {"affinity": anti("zone")})],
            "n2",
            True,
            id="existing-pod-term-rejects-the-newcomer",
        ),
        pytest.param(
            None,
            [("o", "n1", {"affinity": anti("zone", app="db")})],
            "n2",
            False,
            id="existing-pod-term-selects-others",
        ),
        pytest.param(
            None,
            [("o", "n1", {"affinity": anti("rack")})],
            "n1",
            False,
            id="key-missing-on-the-node-term-ignored",
        ),
        pytest.param(
            anti("zone"),
            [("o", "n1", {"phase": "Failed"})],
            "n2",
            False,
            id="finished-pods-ignored",
        ),
    ],
)
def test_scheduler_anti_affinity(
    moving_affinity: dict[str, Any] | None,
    placed: list[tuple[str, str, dict[str, Any]]],
    target: str,
    rejected: bool,
) -> None:
    """kube-scheduler's filter reads whole domains and the existing pods' terms as well."""
    moving = _web("moving", "n9", affinity=moving_affinity)
    pods = [_web(name, where, **kwargs) for name, where, kwargs in placed]
    reason = _scheduler_filter(moving, pods).rejection(NODES[target])
    assert (reason is not None) is rejected


def _scheduler_filter(moving: PodInfo, pods: list[PodInfo]) -> Any:
    """The scheduler's anti-affinity filter for ``moving`` with ``pods`` in place (finished
    ones are never indexed, as the simulation's are not)."""
    index = PodIndex(NODES)
    existing: ExistingTerms[AffinityTerm] = ExistingTerms(NODES)
    in_place = []
    for each in pods:
        if each.phase in ("Succeeded", "Failed"):
            continue
        slot = index.add(each)
        existing.add(slot, each.uid, each.node_name, anti_affinity_terms(each))
        if each.uid == moving.uid:
            in_place.append(slot)
    return forbidden_domains(moving, index, existing, excluding=tuple(in_place))


def test_the_scheduler_filter_never_counts_the_pod_itself() -> None:
    """A pod still in place whose own terms select itself is not kept from its own domain
    by itself (the scheduler compares other pods only), by its own terms or as a pod in
    place."""
    moving = _web("moving", "n1", affinity=anti("zone"))
    assert _scheduler_filter(moving, [moving]).rejection(NODES["n2"]) is None
    other = _web("other", "n1", affinity=anti("zone"))
    assert _scheduler_filter(moving, [moving, other]).rejection(NODES["n2"]) is not None


def test_a_broken_term_after_a_violated_one_still_reports_the_violation() -> None:
    """Upstream reads the terms in order: a term that finds a violation answers before a
    later term that does not parse ends the check."""
    terms = [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}},
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b c"}}},
    ]
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    # Set after the projection, which refuses such a term where it enters.
    candidate = msgspec.structs.replace(_web("candidate", "n1"), affinity=affinity)
    other = _web("other", "n2")
    assert violation(candidate, _index(candidate, other)) is other
    broken_first = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms[::-1]}
    }
    first = msgspec.structs.replace(_web("candidate", "n1"), affinity=broken_first)
    assert violation(first, _index(first, other)) is None
