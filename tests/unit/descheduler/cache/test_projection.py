"""API JSON -> the compact model: requests, QoS, priority, storage, readiness."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.descheduler.cache import projection
from agent.descheduler.cache.projection import (
    UNSCHEDULABLE_SINCE,
    pod_requests,
    project_node,
    project_pod,
    snapshot_from_list,
)
from agent.descheduler.cache.state import PROJECTIONS, ClusterState
from agent.descheduler.model.keys import SPREAD_CONSTRAINTS
from agent.descheduler.model.values import EMPTY_MAP
from tests.harness.deschedulerstate import node, pdb, pod
from tests.harness.kubeobjects import container
from tests.unit.descheduler.cache.test_wire import DOWN_NODE, PENDING_ADDON


def _container(cpu: str, memory: str, **extra: Any) -> dict[str, Any]:
    return {"resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"containers": [_container("100m", "1Mi"), _container("250m", "2Mi")]},
            {"cpu": 350, "memory": 3 * 2**20, "pods": 1},
            id="sum-of-containers",
        ),
        pytest.param(
            {"containers": [_container("100m", "1Mi")], "initContainers": [_container("1", "1Ki")]},
            {"cpu": 1000, "memory": 2**20, "pods": 1},
            id="init-container-raises-each-resource",
        ),
        pytest.param(
            {
                "containers": [_container("100m", "1Mi")],
                "initContainers": [
                    _container("50m", "1Mi", restartPolicy="Always"),
                    _container("100m", "1Mi"),
                ],
            },
            {"cpu": 150, "memory": 2 * 2**20, "pods": 1},
            id="sidecar-adds-to-the-sum",
        ),
        pytest.param(
            {
                "containers": [_container("100m", "1Mi")],
                "overhead": {"cpu": "10m", "memory": "1Ki"},
            },
            {"cpu": 110, "memory": 2**20 + 1024, "pods": 1},
            id="overhead",
        ),
        pytest.param(
            {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]},
            {"cpu": 1000, "memory": 2**30, "pods": 1},
            id="limit-defaults-the-request",
        ),
        pytest.param({"containers": [{}]}, {"pods": 1}, id="best-effort"),
    ],
)
def test_effective_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    """Requests are max(sum of containers, each init container) + overhead, in base units."""
    assert pod_requests(spec) == expected


def test_pod_fields() -> None:
    """A pod keeps only what rules read: kept annotations, sorted images, claims, readiness."""
    raw = pod(
        "p",
        "n1",
        priority=None,
        annotations={"descheduler.alpha.kubernetes.io/evict": "", "noise": "x"},
        containers=[
            container("c0", "b:1", cpu="100m", memory="256Mi"),
            container("c1", "a:1", cpu="100m", memory="256Mi"),
        ],
        volumes=[
            {"name": "d", "emptyDir": {}},
            {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
        ],
        ready=False,
    )
    projected = project_pod(raw)
    assert projected.priority is None
    assert projected.annotations == {"descheduler.alpha.kubernetes.io/evict": ""}
    assert projected.images == ("a:1", "b:1")
    assert (projected.local_storage, projected.pvc_claims) == (True, ("data",))
    assert projected.ready is False
    assert projected.qos == "Burstable"
    assert projected.controller is not None
    assert projected.controller.kind == "ReplicaSet"


def test_node_without_conditions_counts_as_ready() -> None:
    """Upstream's ``IsReady`` only rejects a Ready condition that is not True."""
    raw = node("n")
    raw["status"]["conditions"] = []
    assert project_node(raw).ready is True
    assert project_node(node("n", ready=False)).ready is False


def test_snapshot_from_list_reads_every_kind() -> None:
    """A mixed List becomes nodes, pods by node, namespaces, PDBs, claims and priorities."""
    items = [
        node("n1"),
        pod("p", "n1"),
        {"kind": "Namespace", "metadata": {"name": "default", "labels": {"team": "a"}}},
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "default"},
            "spec": {},
        },
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"storageClassName": "fast"},
        },
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {"kind": "ConfigMap", "metadata": {"name": "ignored"}},
    ]
    state = snapshot_from_list(items, now=5.0)
    assert list(state.nodes) == ["n1"]
    assert [p.name for p in state.pods_on("n1")] == ["p"]
    assert state.namespaces == {"default": {"team": "a"}}
    assert [b.name for b in state.disruption_budgets["default"]] == ["b"]
    assert state.claims["default/c"].storage_class == "fast"
    assert state.priority_classes == {"high": 1000}
    assert state.now == 5.0


def test_spread_constraints_are_kept_in_extra_only_when_present() -> None:
    """``spec.topologySpreadConstraints`` is projected into ``extra``; a pod without any keeps
    the shared empty map."""
    constraint = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    spread = projection.project_pod({"spec": {"topologySpreadConstraints": [constraint]}})
    assert spread.extra[SPREAD_CONSTRAINTS] == (constraint,)
    assert projection.project_pod({"spec": {}}).extra is EMPTY_MAP


def test_unbound_unschedulable_pod_says_since_when() -> None:
    """Only an unbound pod the scheduler called Unschedulable carries the time it said so."""
    pending = project_pod(PENDING_ADDON)
    assert pending.extra[UNSCHEDULABLE_SINCE] == 1_795_305_600.0
    assert "scheduler.alpha.kubernetes.io/critical-pod" in pending.annotations
    bound = project_pod({**PENDING_ADDON, "spec": {"nodeName": "n1"}})
    assert UNSCHEDULABLE_SINCE not in bound.extra


def test_down_node_fields() -> None:
    """A NotReady node keeps its Ready transition time, bootID and only our annotations."""
    down = project_node(DOWN_NODE)
    assert (down.ready, down.ready_transition, down.boot_id) == (False, 1_795_305_600.0, "b-1")
    assert down.annotations == {"kubelet-companion.io/out-of-service": "nodeshutdown"}


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param({"key": "app", "operator": "Bogus", "values": ["a"]}, id="unknown-operator"),
        pytest.param({"key": "app", "operator": "Exists", "values": ["a"]}, id="exists-values"),
        pytest.param({"key": "app", "operator": "NotIn"}, id="not-in-without-values"),
    ],
)
def test_the_live_budget_cache_skips_and_counts_a_budget_the_api_server_refuses(
    expression: dict[str, Any],
) -> None:
    """A budget whose selector the API server would refuse (it would protect nothing) is
    left out of the live cache and counted, not kept; the good one beside it is kept."""
    bad = pdb("bad") | {"spec": {"selector": {"matchExpressions": [expression]}}}
    data = json.dumps({"metadata": {}, "items": [pdb("good", match_labels={"app": "a"}), bad]})
    state = ClusterState(None, PROJECTIONS)  # type: ignore[arg-type]  # never connects
    budgets = state.disruption_budgets
    budgets._apply("REPLACE", budgets._project_all(budgets.decode_page(data.encode())), "1")
    assert list(budgets.store) == ["default/good"]
    assert budgets.skipped == 1
