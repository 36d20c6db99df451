"""Implicit budgets, live: a Deployment without a PodDisruptionBudget loses no more pods at
once than its rollout would take down; the rest of the cycle's evictions of it go as its
replacements turn Ready, within the cycle. The fake API server has no controllers, so the test
plays the ReplicaSet controller: each pod that starts terminating gets a replacement on a cold
node, which turns Ready a moment later. What "at once" means is measured where it happens: a
hook on the fake's store counts, at every write, the Deployment's pods that are not Ready or
are terminating."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from agent.kube.api import KubeApi
from agent.telemetry.metrics import new_registry
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.fake_apiserver.kubelet import FakeKubelet
from tests.harness.kubeobjects import owner_ref
from tests.harness.livedescheduler import run_live
from tests.integration.descheduler.conftest import LOW_NODE_UTILIZATION

REPLICAS = 12
AT_ONCE = 3
"""25 % of 12, the Deployment's default rollout."""
READY_AFTER = 0.3
"""How long a replacement takes to turn Ready: long enough that evictions sent without
waiting for it would all be out before the first one is back."""
# Under LOW_NODE_UTILIZATION, ``hot`` (12 pods of 300m on 4 CPUs: 90 %) sheds 6 pods to get
# under 50 %.


@dataclass
class Unavailability:
    """The Deployment's pods not Ready or terminating, at every write of the fake's store."""

    most: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def hook(self, server: FakeApiServer) -> Any:
        pods = server.resource("pods")

        def observe(rt: Any, _event: Any) -> None:
            if rt.key != pods.key:
                return
            ready = sum(
                1
                for pod in server.store.iter_objects(pods, "default")
                if (pod["metadata"].get("labels") or {}).get("app") == "web"
                and not pod["metadata"].get("deletionTimestamp")
                and any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (pod.get("status") or {}).get("conditions") or ()
                )
            )
            with self.lock:
                self.most = max(self.most, REPLICAS - ready)

        return observe


@dataclass
class Cluster:
    server: FakeApiServer
    cold: list[FakeKubelet]
    rs_uid: str
    unavailable: Unavailability
    replaced: dict[str, str] = field(default_factory=dict)
    """Evicted pod -> its replacement."""


def _pod(name: str, node: str, rs_uid: str) -> dict[str, Any]:
    return kubeobjects.pod(
        name,
        node,
        labels={"app": "web"},
        owner=owner_ref("ReplicaSet", "web-1", uid=rs_uid),
        cpu="300m",
    )


def _web(server: FakeApiServer, hot: FakeKubelet, replicas: int) -> str:
    """Deployment ``web`` and its ReplicaSet, whose ``replicas`` Ready pods all run on
    ``hot``; the ReplicaSet's uid."""
    deployment = server.create(kubeobjects.workload("Deployment", "web", replicas=replicas))
    rs = server.create(
        kubeobjects.workload(
            "ReplicaSet",
            "web-1",
            replicas=replicas,
            owner=owner_ref("Deployment", "web", uid=deployment["metadata"]["uid"]),
        )
    )
    rs_uid: str = rs["metadata"]["uid"]
    for index in range(replicas):
        server.create(_pod(f"web-1-{index:02}", "hot", rs_uid))
        hot.set_ready("default", f"web-1-{index:02}")
    return rs_uid


@pytest.fixture(name="cluster")
def _cluster(fake_apiserver: FakeApiServer) -> Cluster:
    """Deployment ``web`` (12 replicas, the default rollout: 3 at once) and its ReplicaSet,
    whose 12 Ready pods all run on ``hot``; two idle nodes. No PDB."""
    server = fake_apiserver
    hot = server.kubelet("hot", time_scale=0.001)
    cold = [server.kubelet("cold-a"), server.kubelet("cold-b")]
    rs_uid = _web(server, hot, REPLICAS)
    unavailable = Unavailability()
    server.store.add_hook(unavailable.hook(server))
    return Cluster(server, cold, rs_uid, unavailable)


async def _play_replica_set_controller(cluster: Cluster) -> None:
    """Each pod that starts terminating gets a replacement on a cold node (as the ReplicaSet
    controller makes one for a terminating pod), Ready ``READY_AFTER`` later. Polls."""
    server = cluster.server
    due: dict[str, tuple[float, FakeKubelet]] = {}
    while True:
        for pod in server.list("pods", "default", label_selector="app=web"):
            name = pod["metadata"]["name"]
            if not pod["metadata"].get("deletionTimestamp") or name in cluster.replaced:
                continue
            kubelet = cluster.cold[len(cluster.replaced) % 2]
            replacement = f"web-1-r{len(cluster.replaced):02}"
            server.create(_pod(replacement, kubelet.node_name, cluster.rs_uid))
            cluster.replaced[name] = replacement
            due[replacement] = (time.monotonic() + READY_AFTER, kubelet)
        for replacement, (when, kubelet) in list(due.items()):
            if time.monotonic() >= when:
                kubelet.set_ready("default", replacement)
                del due[replacement]
        await asyncio.sleep(0.02)  # the stand-in's poll interval; nothing is asserted on it


async def _run(
    cluster: Cluster,
    kube_api: KubeApi,
    tmp_path: Path,
    policy_text: str = LOW_NODE_UTILIZATION,
    **options: Any,
) -> Any:
    """One cycle, with the controller stand-in running; the registry it counted into."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text)
    registry = new_registry("descheduler")
    controller = asyncio.create_task(_play_replica_set_controller(cluster))
    try:
        code = await run_live(
            policy, kube_api, registry=registry, **{"held_eviction_timeout": 30} | options
        )
    finally:
        controller.cancel()
    assert code == 0
    return registry


def _accepted(server: FakeApiServer) -> list[str]:
    return [
        request.path.split("/")[-2]
        for request in sorted(
            server.requests(method="POST", path_contains="/eviction"), key=lambda r: r.monotonic
        )
        if request.status == 201
    ]


def _results(registry: Any) -> dict[str, float]:
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name == "descheduler_pods_evicted_total":
                result = sample.labels["result"]
                counts[result] = counts.get(result, 0) + sample.value
    return counts


async def test_a_deployment_without_a_pdb_loses_at_most_its_rollouts_share_at_once(
    cluster: Cluster, kube_api: KubeApi, tmp_path: Path
) -> None:
    """LowNodeUtilization sheds 6 of the Deployment's pods from ``hot``: 3 go at once, and
    each of the other 3 goes once a replacement is Ready, all within the one cycle. At no
    write did the Deployment have more than 3 pods unavailable; each held and each released
    eviction is logged with its workload."""
    with capture_logs() as logs:
        registry = await _run(cluster, kube_api, tmp_path)
    evicted = _accepted(cluster.server)
    assert len(evicted) == 6
    assert set(cluster.replaced) <= set(evicted)  # the last ones' may come after the run
    assert cluster.unavailable.most == AT_ONCE
    assert _results(registry) == {"success": 6}
    held = [e for e in logs if e["event"] == "eviction held by an implicit budget"]
    released = [e for e in logs if e["event"] == "implicit budget releases a held eviction"]
    assert [e["owner"] for e in held] == ["Deployment default/web"] * 3
    assert [e["pod"] for e in released] == [e["pod"] for e in held]
    assert all(e["desired"] == REPLICAS and e["max_unavailable"] == AT_ONCE for e in released)


async def test_the_flag_turns_them_off(cluster: Cluster, kube_api: KubeApi, tmp_path: Path) -> None:
    """``--implicit-rollout-budgets=false``: the 6 evictions go at once, as upstream's would,
    and the Deployment has 6 pods unavailable before its first replacement is Ready."""
    registry = await _run(cluster, kube_api, tmp_path, implicit_rollout_budgets=False)
    assert len(_accepted(cluster.server)) == 6
    assert cluster.unavailable.most == 6
    assert _results(registry) == {"success": 6}


async def test_a_pdb_is_the_users_word(cluster: Cluster, kube_api: KubeApi, tmp_path: Path) -> None:
    """A PDB selecting the pods replaces the implicit budget: allowing 5 disruptions (7 of
    12 available), 5 go at once (LowNodeUtilization's 6th is refused by the PDB, as
    upstream's would be)."""
    cluster.server.create(kubeobjects.pdb("web", match_labels={"app": "web"}, min_available=7))
    registry = await _run(cluster, kube_api, tmp_path)
    assert len(_accepted(cluster.server)) == 5
    assert cluster.unavailable.most == 5
    assert _results(registry)["success"] == 5


async def test_what_it_evicted_counts_at_once_before_the_watch_shows_it(
    cluster: Cluster, kube_api: KubeApi, tmp_path: Path
) -> None:
    """No API server keeps an implicit budget: with the pod watch silent after the list (a
    stalled stream), the cache never shows the 3 evictions nor any replacement, yet the held
    evictions do not go; they are reported blocked by the implicit budget when the hold
    ends, and the Deployment never had more than 3 pods unavailable."""
    cluster.server.faults.stall_watches(r"/api/v1/pods$", times=1)
    registry = await _run(cluster, kube_api, tmp_path, held_eviction_timeout=1)
    assert len(_accepted(cluster.server)) == AT_ONCE
    assert cluster.unavailable.most == AT_ONCE
    assert _results(registry) == {"success": 3, "blocked by implicit budget": 3}


BALANCE_AND_DUPLICATES = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: balance
    pluginConfig:
      - name: "LowNodeUtilization"
        args:
          thresholds: {"cpu": 20}
          targetThresholds: {"cpu": 50}
          evictableNamespaces: {"exclude": ["batch"]}
      - name: "RemoveDuplicates"
        args:
          namespaces: {"include": ["batch"]}
    plugins:
      balance:
        enabled: ["LowNodeUtilization", "RemoveDuplicates"]
"""
"""``hot`` at 3600m of 4000m: LowNodeUtilization takes 6 of ``web``'s 8 pods (300m each) to get
it to 1800m, at most 50 %; RemoveDuplicates then takes 2 of ``batch``'s 4 (300m each, one
owner), leaving the node the 2 of 4 it keeps of them."""


@pytest.fixture(name="crowded")
def _crowded(fake_apiserver: FakeApiServer) -> Cluster:
    """``hot`` runs Deployment ``web``'s 8 Ready pods (the default rollout: 2 at once; no PDB)
    and 4 Ready pods of one owner in namespace ``batch`` whose controller is gone (so no
    implicit budget: their evictions go at once); two idle nodes."""
    server = fake_apiserver
    hot = server.kubelet("hot", time_scale=0.001)
    cold = [server.kubelet("cold-a"), server.kubelet("cold-b")]
    rs_uid = _web(server, hot, 8)
    server.create(kubeobjects.namespace("batch"))
    for index in range(4):
        server.create(
            kubeobjects.pod(
                f"batch-{index}",
                "hot",
                namespace="batch",
                owner=owner_ref("ReplicaSet", "batch-1"),
                cpu="300m",
            )
        )
        hot.set_ready("batch", f"batch-{index}")
    return Cluster(server, cold, rs_uid, Unavailability())


async def test_a_held_balancing_eviction_goes_only_while_its_node_is_above_target(
    crowded: Cluster, kube_api: KubeApi, tmp_path: Path
) -> None:
    """``web``'s first 2 evictions and ``batch``'s 2 go at once; ``web``'s other 4 are held by
    its implicit budget. When released, the first two are still needed (``hot`` at 2400m,
    then 2100m, above its 2000m target), the last two are not (1800m): they are dropped,
    never sent, logged and counted as ``node no longer above target``, so no replacement
    is made for a node that no longer needs to shed it."""
    with capture_logs() as logs:
        registry = await _run(crowded, kube_api, tmp_path, BALANCE_AND_DUPLICATES)
    evicted = _accepted(crowded.server)
    assert sorted(e for e in evicted if e.startswith("web")) == [
        "web-1-00",
        "web-1-01",
        "web-1-02",
        "web-1-03",
    ]
    assert len([e for e in evicted if e.startswith("batch")]) == 2
    assert _results(registry) == {"success": 6, "node no longer above target": 2}
    dropped = [e for e in logs if e["event"].startswith("held eviction dropped")]
    assert [(e["pod"], e["node"]) for e in dropped] == [
        ("default/web-1-04", "hot"),
        ("default/web-1-05", "hot"),
    ]
    done = next(e for e in logs if e["event"] == "descheduling cycle done")
    assert (done["dropped"], done["failed"]) == (2, 0)
