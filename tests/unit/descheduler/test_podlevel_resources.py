"""Pod-level ``spec.resources`` count wherever requests are used, as upstream's ``PodRequests``
counts them: node utilization, node fit, placement."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.cache.projection import pod_requests, project_pod
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.core.placement.replacements import place
from agent.descheduler.core.rules.nodefit import NodeFit
from agent.descheduler.plan.shape import PlannedEviction
from tests.harness.deschedulerstate import node, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

POD_LEVEL = {"requests": {"cpu": "1", "memory": "4Gi"}}


def _pod_level(name: str, node_name: str, **kwargs: Any) -> dict[str, Any]:
    """A pod whose container asks 100m, and which asks 1 CPU and 4Gi at pod level."""
    return pod(name, node_name, resources=POD_LEVEL, **kwargs)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"containers": [{"resources": {"requests": {"cpu": "100m"}}}], "resources": POD_LEVEL},
            {"cpu": 1000, "memory": 4 * 2**30, "pods": 1},
            id="pod-level-replaces-the-containers",
        ),
        pytest.param(
            {
                "containers": [{"resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": "1"}}}],
                "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "4"}},
            },
            {"cpu": 2000, "nvidia.com/gpu": 1, "pods": 1},
            id="only-cpu-memory-and-hugepages-at-pod-level",
        ),
        pytest.param(
            {"containers": [{}], "resources": {"limits": {"cpu": "3"}}},
            {"cpu": 3000, "pods": 1},
            id="a-pod-level-limit-defaults-the-request",
        ),
        pytest.param(
            {
                "containers": [{"resources": {"requests": {"cpu": "500m"}}}],
                "resources": {"limits": {"cpu": "3"}},
            },
            {"cpu": 500, "pods": 1},
            id="containers-requests-win-over-a-pod-level-limit",
        ),
        pytest.param(
            {
                "containers": [{}],
                "resources": {"requests": {"hugepages-2Mi": "4Mi"}},
                "overhead": {"cpu": "10m"},
            },
            {"hugepages-2Mi": 4 * 2**20, "cpu": 10, "pods": 1},
            id="overhead-on-top",
        ),
    ],
)
def test_pod_requests_follow_upstreams_pod_requests(
    spec: dict[str, Any], expected: dict[str, int]
) -> None:
    """Pod-level requests replace the containers' sum for the resources pod-level resources
    support; a pod-level limit stands in for a request nobody set; overhead is added."""
    assert pod_requests(spec) == expected


def test_four_pod_level_pods_fill_a_four_cpu_node_for_low_node_utilization() -> None:
    """Four pods of 1 CPU each (at pod level, 100m per container) make a 4-CPU node 100 %
    used: LowNodeUtilization classifies it over-utilized and moves pods to the empty node."""
    items = [node("full"), node("empty")]
    items += [
        _pod_level(f"p{i}", "full", owner=owner_ref("ReplicaSet", f"rs{i}")) for i in range(4)
    ]
    plan = run_cycle(
        policy(
            (
                "LowNodeUtilization",
                {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}},
            )
        ),
        snapshot(*items),
    )
    categories = {facts["node"]: facts["category"] for facts in plan.nodes}
    assert categories["full"] == "overutilized"
    assert len(plan.allowed) == 2  # 100 % -> 50 %


def test_node_fit_counts_pod_level_requests() -> None:
    """A node holding four 1-CPU pod-level pods has no room for a 1-CPU pod."""
    items = [node("full"), *(_pod_level(f"p{i}", "full") for i in range(4))]
    state = snapshot(*items)
    newcomer = project_pod(_pod_level("new", "elsewhere"))
    assert NodeFit(state).reason(newcomer, state.nodes["full"]) == "insufficient cpu"


def test_placement_counts_pod_level_requests() -> None:
    """The plan's destination for a pod-level pod is never a node it would not fit."""
    items = [node("full"), node("spare", cpu="2"), node("source")]
    items += [_pod_level(f"p{i}", "full") for i in range(4)]
    moving = _pod_level("moving", "source")
    items.append(moving)
    state = snapshot(*items)
    eviction = PlannedEviction(
        namespace="default",
        name="moving",
        uid="uid-default-moving",
        node="source",
        plugin="test",
        profile="p",
        reason="",
    )
    (placement,) = place(state, [eviction]).placements
    assert placement.node == "spare"
