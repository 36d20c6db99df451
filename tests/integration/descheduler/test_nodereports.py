"""Balancing on the agents' real usage, end to end: NodeReports through the API server.

The agents' reports (our CRD, registered on the fake API server) are watched by the
descheduler process itself; nothing is injected. The hot node's pods request little CPU
but use a lot, so only the real-usage policy sees it as over-utilized.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent.kube.api import KubeApi
from agent.kubesemantics.timestamps import rfc3339
from agent.telemetry.metrics import new_registry
from tests.harness.deschedulerstate import node
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import node_report
from tests.harness.livedescheduler import run_live
from tests.harness.nodereport import register_crd
from tests.integration.descheduler.conftest import owned_pod

REAL_USAGE_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: real-usage
    pluginConfig:
    - name: "LowNodeUtilization"
      args:
        thresholds: {"cpu": 20}
        targetThresholds: {"cpu": 50}
        metricsUtilization: {"source": "NodeReports"}
    plugins:
      balance:
        enabled: ["LowNodeUtilization"]
"""
POD_CPU_CORES = {"hot-0": 0.4, "hot-1": 1.5, "hot-2": 1.0, "hot-3": 0.7}
"""Real use on a 4-core node: 3.6 cores, 90 %; the four pods request 100m each (10 %)."""


def _node(name: str) -> dict[str, Any]:
    """Allocatable all its capacity (the descheduler's test defaults)."""
    return node(name, status={"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}})


def _report(
    node: str, uid: str, cpu_cores: float, pods: list[dict[str, Any]], *, age: float = 5.0
) -> dict[str, Any]:
    """The report an agent writes: owned by its Node (by uid), sampled ``age`` s ago."""
    return node_report(
        node,
        rfc3339(time.time() - age),
        node_uid=uid,
        capacity={"cpu": 4, "memory": 16 * 2**30, "swap": 0},
        usage={"cpu": cpu_cores, "memory": 2**30, "swap": 0},
        pods=pods,
        readiness={"gateHeld": False},
        shutdown={"state": "none"},
        agentStopped=False,
    )


def _cluster(server: FakeApiServer, *, hot_report_age: float = 5.0) -> None:
    """A hot node (really 90 % busy, 10 % requested) and two idle nodes, all reporting."""
    register_crd(server)
    uids = {
        name: server.create(_node(name))["metadata"]["uid"] for name in ("hot", "cold-a", "cold-b")
    }
    kubelet = server.kubelet("hot", register_node=False)
    pod_reports = []
    for name, cores in POD_CPU_CORES.items():
        pod = owned_pod(name, "hot", "web", kind="ReplicaSet")
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
        created = server.create(pod)
        kubelet.set_ready("default", name)
        uid = created["metadata"]["uid"]
        pod_reports.append(
            {"namespace": "default", "name": name, "uid": uid, "cpu": cores, "memory": 2**28}
        )
    hot = _report("hot", uids["hot"], sum(POD_CPU_CORES.values()), pod_reports, age=hot_report_age)
    server.create(hot)
    for name in ("cold-a", "cold-b"):
        server.create(_report(name, uids[name], 0.1, []))


def _evicted(server: FakeApiServer) -> list[str]:
    """Evicted pods by name: the pool sends them concurrently, so arrival order is not kept."""
    return sorted(
        request.path.split("/")[-2]
        for request in server.requests(method="POST")
        if request.path.endswith("/eviction")
    )


def _fallbacks(registry: Any) -> dict[str, float]:
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name.endswith("usage_fallback_total"):
                reason = next(iter(sample.labels.values()), "")
                counts[reason] = counts.get(reason, 0) + sample.value
    return counts


async def test_a_hot_node_is_drained_of_its_biggest_real_users_until_below_target(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The node the agents report 90 % busy sheds the pods using the most (1.5 and 1.0
    cores) and stops once under 50 %, though its requests alone say 10 %."""
    _cluster(fake_apiserver)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(REAL_USAGE_POLICY)
    code = await run_live(policy_file, kube_api)
    assert code == 0
    assert _evicted(fake_apiserver) == ["hot-1", "hot-2"]


async def test_a_stale_report_falls_back_to_requests_and_is_counted(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A report older than three heartbeats is not believed: the hot node is judged by its
    requests (10 %), nothing is evicted, and the fallback metric counts the stale node."""
    _cluster(fake_apiserver, hot_report_age=600.0)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(REAL_USAGE_POLICY)
    registry = new_registry("descheduler")
    code = await run_live(policy_file, kube_api, registry=registry)
    assert code == 0
    assert _evicted(fake_apiserver) == []
    assert _fallbacks(registry) == {"stale": 1}
