"""``metricsServer: true`` and ``source: KubernetesMetrics`` read metrics.k8s.io (NodeMetrics,
PodMetrics) from the fake API server through the official client, as upstream v0.36 reads
them; the agents' NodeReports stand in, by name, only when the group is not served; a
PodMetrics list that fails fails the cycle."""

from __future__ import annotations

import io
import json
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
from tests.harness.livedescheduler import run_live
from tests.harness.nodereport import register_crd
from tests.integration.descheduler.conftest import owned_pod
from tests.integration.descheduler.test_nodereports import _report

POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
metricsProviders:
- source: KubernetesMetrics
profiles:
- name: default
  pluginConfig:
  - name: "LowNodeUtilization"
    args:
      thresholds: {{cpu: 20}}
      targetThresholds: {{cpu: 50}}
      metricsUtilization: {metrics}
  plugins:
    balance:
      enabled: ["LowNodeUtilization"]
"""
NODE_CPU = {"a": "3", "b": "400m", "c": "1200m"}
"""Of 4 CPUs each: a 75 % (over 50), b 10 % (under 20), c 30 %."""
POD_CPU = {"a-0": "500m", "a-1": "400m"}
"""a-2 has no PodMetrics: upstream cannot weigh it and skips it."""


def _cluster(server: FakeApiServer, *, metrics: bool = True) -> None:
    for name in NODE_CPU:
        kubelet = server.kubelet(name)  # 4 CPUs allocatable
        for index in range(3):
            pod = f"{name}-{index}"
            server.create(owned_pod(pod, name, f"app-{name}"))
            kubelet.set_ready("default", pod)
    if metrics:
        server.serve_metrics_api()
        for name, cpu in NODE_CPU.items():
            server.create(kubeobjects.node_metrics(name, cpu, "1Gi"))
        for pod, cpu in POD_CPU.items():
            server.create(kubeobjects.pod_metrics(pod, {"app": {"cpu": cpu, "memory": "64Mi"}}))


def _policy(tmp_path: Path, metrics: str = "{source: KubernetesMetrics}") -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.format(metrics=metrics))
    return path


def _evicted(server: FakeApiServer) -> list[str]:
    return sorted(
        r.path.split("/")[-2]
        for r in server.requests(method="POST")
        if r.path.endswith("/eviction") and r.status == 201
    )


async def _run(api: KubeApi, policy: Path, **options: Any) -> tuple[int, str, object]:
    out = io.StringIO()
    registry = new_registry("descheduler")
    code = await run_live(policy, api, out=out, registry=registry, **options)
    return code, out.getvalue(), registry


@pytest.mark.parametrize("metrics", ["{source: KubernetesMetrics}", "{metricsServer: true}"])
async def test_node_and_pod_metrics_decide_as_upstream(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path, metrics: str
) -> None:
    """a at 75 % of its CPUs by NodeMetrics (its requests are 300m, 7.5 %) loses a-0 and a-1
    (500m + 400m leave it at 2100m, still above 2000m), a-2 without PodMetrics is skipped;
    nothing comes from the agents' NodeReports."""
    _cluster(fake_apiserver)
    code, _, _ = await _run(kube_api, _policy(tmp_path, metrics))
    assert code == 0
    assert _evicted(fake_apiserver) == ["a-0", "a-1"]
    lists = {r.path for r in fake_apiserver.requests(method="GET") if "metrics.k8s.io" in r.path}
    assert lists == {
        "/apis/metrics.k8s.io/v1beta1",
        "/apis/metrics.k8s.io/v1beta1/nodes",
        "/apis/metrics.k8s.io/v1beta1/pods",
    }


async def test_without_metrics_server_node_reports_stand_in_by_name(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """Discovery says metrics.k8s.io is not served: the warning names the fallback, and the
    dry run's plan shows a (whose agent reports 3 cores) read from its NodeReport with
    ``fallback: metrics-api-absent``, and b and c (no report) on requests; nothing is read
    from a metrics API that is not there."""
    _cluster(fake_apiserver, metrics=False)
    register_crd(fake_apiserver)
    uid = fake_apiserver.get("nodes", "a")["metadata"]["uid"]
    fake_apiserver.create(_report("a", uid, 3.0, []))
    with capture_logs() as logs:
        code, out, _ = await _run(kube_api, _policy(tmp_path), dry_run=True, output="json")
    assert code == 0
    plan = json.loads(out)
    assert {(f["node"], f["usageSource"], f["fallback"]) for f in plan["nodes"]} == {
        ("a", "NodeReports", "metrics-api-absent"),
        ("b", "requests", "missing"),
        ("c", "requests", "missing"),
    }
    assert {e["node"] for e in plan["evictions"]} == {"a"}
    assert any("metrics.k8s.io is not served" in e["event"] for e in logs)
    assert not [r for r in fake_apiserver.requests() if "/metrics.k8s.io/v1beta1/" in r.path]


async def test_a_failed_pod_metrics_list_fails_the_cycle(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """PodMetrics unavailable (503): no pod is evicted blind, the one-shot run exits 1, the
    cycle and the source's error are counted."""
    _cluster(fake_apiserver)
    fake_apiserver.faults.add("GET", r"/apis/metrics.k8s.io/v1beta1/pods$", status=503, times=None)
    code, _, registry = await _run(kube_api, _policy(tmp_path))
    assert code == 1
    assert _evicted(fake_apiserver) == []
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())  # type: ignore[arg-type]
        for s in family.samples
    }
    assert samples[("kubelet_companion_descheduler_cycles_total", (("outcome", "failed"),))] == 1
    key = (
        "kubelet_companion_descheduler_usage_source_errors_total",
        (("source", "KubernetesMetrics"),),
    )
    assert samples[key] >= 1


async def test_node_metrics_never_sampled_fail_the_cycle_saying_why(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The NodeMetrics list fails from the start: the first cycle waits for the first
    sample, then fails with why there is none (exit 1), and evicts nothing on requests."""
    _cluster(fake_apiserver)
    fake_apiserver.faults.add("GET", r"/apis/metrics.k8s.io/v1beta1/nodes$", status=503, times=None)
    code, _, _ = await _run(kube_api, _policy(tmp_path))
    assert code == 1
    assert _evicted(fake_apiserver) == []
    (event,) = [
        e
        for e in fake_apiserver.list("events", "kube-system")
        if e["reason"] == "DeschedulingFailed"
    ]
    assert "NodeMetrics not read" in event["message"]
