"""Eviction subresource and PodDisruptionBudget behaviour of the fake API server."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.harness.fake_apiserver import FakeApiServer, FakeKubelet
from tests.harness.kubeobjects import pdb, pod

JSON = dict[str, Any]
NODE = "node-a"


@pytest.fixture
def kubelet(fake_apiserver: FakeApiServer) -> FakeKubelet:
    """A fast fake kubelet for NODE (grace periods scaled by 0.01; stopped with the server)."""
    return fake_apiserver.kubelet(NODE, time_scale=0.01)


def running(server: FakeApiServer, kubelet: FakeKubelet, *names: str, ready: bool = True) -> None:
    """Create pods labelled app=web on NODE and report them Running (Ready or not)."""
    for name in names:
        server.create(pod(name, node=NODE, labels={"app": "web"}))
        kubelet.set_ready("default", name, ready=ready)


def evict(core: client.CoreV1Api, name: str, grace: int | None = None) -> Any:
    """POST an eviction for `name` in default (raw response, so the status code is visible)."""
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        delete_options=None
        if grace is None
        else client.V1DeleteOptions(grace_period_seconds=grace),
    )
    return core.create_namespaced_pod_eviction(name, "default", body, _preload_content=False)


def pdb_status(server: FakeApiServer, name: str = "budget") -> JSON:
    """The status the disruption controller wrote on a PDB."""
    status: JSON = server.get("poddisruptionbudgets", name, "default").get("status") or {}
    return status


def test_eviction_forbidden_by_the_budget_is_429(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """An eviction that would break minAvailable is 429 with a DisruptionBudget cause."""
    running(fake_apiserver, kubelet, "web-0", "web-1")
    fake_apiserver.create(pdb("budget", match_labels={"app": "web"}, min_available=2))
    with pytest.raises(ApiException) as exc:
        evict(core, "web-0")
    assert exc.value.status == 429
    body = json.loads(exc.value.body or "{}")
    assert body["kind"] == "Status"
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget budget needs 2 healthy pods and has 2 currently",
        }
    ]
    assert (
        fake_apiserver.get("pods", "web-0", "default")["metadata"].get("deletionTimestamp") is None
    )


def test_allowed_eviction_deletes_gracefully_and_the_kubelet_removes_the_pod(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """An allowed eviction is 201, deletes with the eviction's grace, and updates the PDB."""
    running(fake_apiserver, kubelet, "web-0", "web-1", "web-2")
    fake_apiserver.create(pdb("budget", match_labels={"app": "web"}, min_available=2))
    assert pdb_status(fake_apiserver)["disruptionsAllowed"] == 1
    kubelet.stick("default", "web-0")
    response = evict(core, "web-0", grace=7)
    assert response.status == 201
    assert json.loads(response.data)["status"] == "Success"
    evicted = fake_apiserver.get("pods", "web-0", "default")
    assert evicted["metadata"]["deletionGracePeriodSeconds"] == 7
    target = [c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target[0]["reason"] == "EvictionByEvictionAPI"
    assert {k: pdb_status(fake_apiserver)[k] for k in ("currentHealthy", "disruptionsAllowed")} == {
        "currentHealthy": 2,
        "disruptionsAllowed": 0,
    }
    with pytest.raises(ApiException) as second:
        evict(core, "web-1")
    assert second.value.status == 429
    kubelet.unstick("default", "web-0")
    assert kubelet.wait_removed("default", "web-0", timeout=5)
    status = pdb_status(fake_apiserver)
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"]) == (2, 2, 2)


def test_eviction_without_grace_uses_the_pod_grace_period(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """Without deleteOptions, the pod's terminationGracePeriodSeconds applies."""
    fake_apiserver.create(pod("solo", node=NODE, grace_seconds=12))
    kubelet.set_ready("default", "solo")
    kubelet.stick("default", "solo")
    assert evict(core, "solo").status == 201
    assert (
        fake_apiserver.get("pods", "solo", "default")["metadata"]["deletionGracePeriodSeconds"]
        == 12
    )


def test_two_matching_budgets_are_a_server_error(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """More than one PDB selecting the pod is a 500, as the real eviction handler answers."""
    running(fake_apiserver, kubelet, "web-0", "web-1")
    fake_apiserver.create(pdb("one", match_labels={"app": "web"}, max_unavailable=1))
    fake_apiserver.create(pdb("two", match_labels={"app": "web"}, max_unavailable=1))
    with pytest.raises(ApiException) as exc:
        evict(core, "web-0")
    assert exc.value.status == 500
    assert "more than one PodDisruptionBudget" in json.loads(exc.value.body or "{}")["message"]


@pytest.mark.parametrize(
    ("budget", "desired", "allowed"),
    [
        ({"min_available": "50%"}, 2, 1),
        ({"max_unavailable": "50%"}, 1, 2),
        ({"max_unavailable": 1}, 2, 1),
        ({"min_available": 3}, 3, 0),
    ],
)
def test_budget_arithmetic_rounds_percentages_up(
    fake_apiserver: FakeApiServer,
    kubelet: FakeKubelet,
    budget: dict[str, Any],
    desired: int,
    allowed: int,
) -> None:
    """desiredHealthy/disruptionsAllowed follow the disruption controller (percentages round up)."""
    running(fake_apiserver, kubelet, "web-0", "web-1", "web-2")
    fake_apiserver.create(pdb("budget", match_labels={"app": "web"}, **budget))
    status = pdb_status(fake_apiserver)
    assert (status["expectedPods"], status["currentHealthy"]) == (3, 3)
    assert (status["desiredHealthy"], status["disruptionsAllowed"]) == (desired, allowed)
    condition = status["conditions"][0]
    assert condition["type"] == "DisruptionAllowed"
    assert condition["status"] == ("True" if allowed else "False")


def test_unready_pod_eviction_follows_if_healthy_budget(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """An unready pod may be evicted while the healthy pods still satisfy the budget."""
    running(fake_apiserver, kubelet, "web-0", "web-1")
    running(fake_apiserver, kubelet, "web-2", ready=False)
    fake_apiserver.create(pdb("budget", match_labels={"app": "web"}, min_available=2))
    assert pdb_status(fake_apiserver)["disruptionsAllowed"] == 0
    with pytest.raises(ApiException) as exc:
        evict(core, "web-0")
    assert exc.value.status == 429
    assert evict(core, "web-2").status == 201


def test_unready_pod_eviction_under_an_unmet_budget(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """Below the budget, unready pods are protected unless the policy is AlwaysAllow."""
    running(fake_apiserver, kubelet, "web-0")
    running(fake_apiserver, kubelet, "web-1", "web-2", ready=False)
    fake_apiserver.create(pdb("budget", match_labels={"app": "web"}, min_available=2))
    with pytest.raises(ApiException) as exc:
        evict(core, "web-1")
    assert exc.value.status == 429
    fake_apiserver.patch(
        "poddisruptionbudgets",
        "budget",
        {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}},
        "default",
    )
    assert evict(core, "web-1").status == 201


def test_pending_and_terminating_pods_skip_the_budget(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet, core: client.CoreV1Api
) -> None:
    """Pending pods and pods already terminating are evicted regardless of budgets."""
    fake_apiserver.create(pdb("budget", match_labels={"app": "web"}, min_available=10))
    fake_apiserver.create(pod("pending", node=NODE, labels={"app": "web"}))
    assert evict(core, "pending").status == 201
    running(fake_apiserver, kubelet, "web-0")
    kubelet.stick("default", "web-0")
    fake_apiserver.delete("pods", "web-0", "default", grace_period_seconds=60)
    response = evict(core, "web-0", grace=30)
    assert response.status == 201
    assert (
        fake_apiserver.get("pods", "web-0", "default")["metadata"]["deletionGracePeriodSeconds"]
        == 30
    )


def test_eviction_of_a_missing_pod_is_404(core: client.CoreV1Api) -> None:
    """Evicting a pod that does not exist is 404 NotFound."""
    with pytest.raises(ApiException) as exc:
        evict(core, "ghost")
    assert exc.value.status == 404


def test_policy_v1beta1_eviction_bodies_are_accepted(
    fake_apiserver: FakeApiServer, kubelet: FakeKubelet
) -> None:
    """Old clients posting a policy/v1beta1 Eviction get the same handling."""
    running(fake_apiserver, kubelet, "web-0")
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "default"},
    }
    response = urllib3.PoolManager().request(
        "POST",
        f"{fake_apiserver.url}/api/v1/namespaces/default/pods/web-0/eviction",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 201
    assert kubelet.wait_removed("default", "web-0", timeout=5)
