"""Evictions a PodDisruptionBudget refuses when the cycle plans them are held, not dropped: the
live loop sends each when the budget's watch says it may go, within the cycle, and reports what
is still refused when the hold ends. The dry run keeps saying what a budget blocks now."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent.kube.api import KubeApi
from agent.telemetry.metrics import new_registry
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import owner_ref
from tests.harness.livedescheduler import run_live
from tests.integration.descheduler.conftest import LOW_NODE_UTILIZATION, owned_pod


def _cluster(server: FakeApiServer, *, max_unavailable: int) -> None:
    """``db`` has three Ready pods on n2 (two of them surplus for RemoveDuplicates), under a
    budget of ``max_unavailable``; n2's kubelet finishes a deletion in a few milliseconds,
    which is when the budget (counted over the pods that exist) recovers."""
    server.kubelet("n1")
    server.kubelet("n3")
    kubelet = server.kubelet("n2", time_scale=0.001)
    for index in range(3):
        server.create(owned_pod(f"db-{index}", "n2", "db"))
        kubelet.set_ready("default", f"db-{index}")
    server.create(
        kubeobjects.pdb("db", match_labels={"app": "db"}, max_unavailable=max_unavailable)
    )


def _evictions(server: FakeApiServer) -> list[tuple[str, int]]:
    """Each Eviction POST, in arrival order: the pod and the answer's status code."""
    return [
        (request.path.split("/")[-2], request.status)
        for request in sorted(
            server.requests(method="POST", path_contains="/eviction"), key=lambda r: r.monotonic
        )
    ]


def _results(registry: object) -> dict[str, float]:
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):  # type: ignore[arg-type]
        for sample in family.samples:
            if sample.name == "descheduler_pods_evicted_total":
                result = sample.labels["result"]
                counts[result] = counts.get(result, 0) + sample.value
    return counts


async def test_a_held_eviction_goes_once_the_budget_allows_it(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """The budget allows one disruption: db-1 goes at once, db-2 is held and goes as soon as
    db-1's deletion lets the budget recover, in the same cycle."""
    _cluster(fake_apiserver, max_unavailable=1)
    registry = new_registry("descheduler")
    code = await run_live(policy_file, kube_api, held_eviction_timeout=30, registry=registry)
    assert code == 0
    accepted = [name for name, status in _evictions(fake_apiserver) if status == 201]
    assert accepted == ["db-1", "db-2"]
    assert not fake_apiserver.exists("pods", "db-2", "default")
    assert _results(registry) == {"success": 2}


async def test_what_the_budget_still_refuses_when_the_hold_ends_is_reported_blocked(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """A budget that allows nothing: neither held eviction is sent (its watch never says
    it may go), and both are reported blocked by the budget when the hold ends."""
    _cluster(fake_apiserver, max_unavailable=0)
    registry = new_registry("descheduler")
    code = await run_live(policy_file, kube_api, held_eviction_timeout=0.5, registry=registry)
    assert code == 0
    assert _evictions(fake_apiserver) == []
    assert all(fake_apiserver.exists("pods", f"db-{i}", "default") for i in range(3))
    assert _results(registry) == {"blocked by PodDisruptionBudget": 2}


async def test_the_dry_run_says_what_a_budget_blocks_now(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """The dry run sends nothing and holds nothing: db-1 is allowed, db-2 blocked now."""
    _cluster(fake_apiserver, max_unavailable=1)
    out = StringIO()
    code = await run_live(policy_file, kube_api, dry_run=True, output="json", out=out)
    assert code == 0
    plan = json.loads(out.getvalue())
    assert [(e["pod"], e["blockedByPDB"]) for e in plan["evictions"]] == [
        ("default/db-1", False),
        ("default/db-2", True),
    ]
    assert _evictions(fake_apiserver) == []


async def test_a_utilization_eviction_a_budget_refuses_is_never_sent(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """LowNodeUtilization's pods are chosen for their node's load, which the cycle's own
    evictions change: one its budget refuses is not held. n1 runs four 1-cpu pods of ``web``
    (100 %) under a budget allowing one disruption: one eviction goes, the budget recovers
    within milliseconds, and still none of the refused ones is sent; they are reported
    blocked."""
    fake_apiserver.kubelet("n2")
    kubelet = fake_apiserver.kubelet("n1", time_scale=0.001)
    for index in range(4):
        name = f"web-{index}"
        fake_apiserver.create(
            kubeobjects.pod(
                name, "n1", labels={"app": "web"}, owner=owner_ref("ReplicaSet", "web"), cpu="1"
            )
        )
        kubelet.set_ready("default", name)
    fake_apiserver.create(kubeobjects.pdb("web", match_labels={"app": "web"}, max_unavailable=1))
    policy = tmp_path / "policy.yaml"
    policy.write_text(LOW_NODE_UTILIZATION)
    registry = new_registry("descheduler")
    code = await run_live(policy, kube_api, held_eviction_timeout=5, registry=registry)
    assert code == 0
    assert [status for _, status in _evictions(fake_apiserver)] == [201]
    assert _results(registry) == {"success": 1, "blocked by PodDisruptionBudget": 3}
