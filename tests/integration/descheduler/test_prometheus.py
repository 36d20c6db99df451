"""Upstream's Prometheus policy, unchanged, against a real Prometheus: the same decisions as
upstream's rules on the same numbers, and never a cycle that silently does nothing (a
Prometheus that is down or answers garbage fails a one-shot run with exit 1, the cycle
metric, the source's error counter and a Warning Event)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent.kube.api import KubeApi
from agent.telemetry.metrics import new_registry
from tests.harness.cli import run_cli
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kustomize import NAMESPACE
from tests.harness.livedescheduler import run_live
from tests.harness.ports import free_port
from tests.harness.prometheus import Exporter, QueryStandIn, RealPrometheus, vector
from tests.harness.tls import self_signed_certificate
from tests.integration.descheduler.conftest import owned_pod

METRIC = "e2e_node_cpu_usage_ratio"
UPSTREAM_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
metricsProviders:
- source: Prometheus
  prometheus:
    url: "{url}"
profiles:
- name: default
  pluginConfig:
  - name: "DefaultEvictor"
  - name: "LowNodeUtilization"
    args:
      thresholds: {{"MetricResource": 20}}
      targetThresholds: {{"MetricResource": 50}}
      metricsUtilization:
        source: Prometheus
        prometheus:
          query: e2e_node_cpu_usage_ratio
  plugins:
    balance:
      enabled: ["LowNodeUtilization"]
"""
"""The e2e benchmark's policy for upstream v0.36 (``{url}`` filled in), as users write it."""
RATIOS = {"a": 0.9, "b": 0.6, "c": 0.1, "d": 0.15}
TOKEN_SECRET = "kubelet-companion-prometheus-token"  # noqa: S105 - the Secret's name


def _cluster(server: FakeApiServer) -> None:
    """Four Ready nodes, three Running pods of one owner on each."""
    for name in RATIOS:
        kubelet = server.kubelet(name)
        for index in range(3):
            server.create(owned_pod(f"{name}-{index}", name, f"app-{name}"))
            kubelet.set_ready("default", f"{name}-{index}")


def _evicted(server: FakeApiServer) -> list[str]:
    return sorted(
        r.path.split("/")[-2]
        for r in server.requests(method="POST")
        if r.path.endswith("/eviction") and r.status == 201
    )


def _evicted_from(server: FakeApiServer) -> list[str]:
    """The node of each evicted pod (``<node>-<index>``), sorted. Which of a node's pods
    goes is its uid's to say (the fake API server's are random, as a real one's)."""
    return [name.rsplit("-", 1)[0] for name in _evicted(server)]


def _policy(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(UPSTREAM_POLICY.format(url=url) + extra)
    return path


def _samples(registry: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def _one_shot(
    api: KubeApi, policy: Path, **prometheus: Any
) -> tuple[int, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """One run; ``prometheus`` are the ``prometheus_*`` options."""
    registry = new_registry("descheduler")
    code = await run_live(policy, api, registry=registry, **prometheus)
    return code, _samples(registry)


def test_upstreams_policy_against_a_real_prometheus_from_the_command_line(
    fake_apiserver: FakeApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    """Outside a pod, pointed at the server with ``--prometheus-url``: the two nodes above
    50 % (a at 0.9, b at 0.6) lose one pod each, as upstream evicts one per over-utilized
    node without pod usage; the run exits 0."""
    _cluster(fake_apiserver)
    with Exporter(METRIC, RATIOS) as exporter, RealPrometheus(exporter, tmp_path) as prometheus:
        policy = _policy(tmp_path, "http://prometheus.example:9090")
        result = run_cli(
            "descheduler",
            "--policy-config-file",
            str(policy),
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--prometheus-url",
            prometheus.url,
        )
    assert result.returncode == 0, result.stderr
    assert _evicted_from(fake_apiserver) == ["a", "b"]


async def test_values_outside_zero_one_fail_the_cycle_loudly(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A real Prometheus whose query answers 1.5 for a node: nothing is evicted, and the
    one-shot run exits 1 with upstream's words in the Warning Event."""
    _cluster(fake_apiserver)
    with (
        Exporter(METRIC, {**RATIOS, "c": 1.5}) as exporter,
        RealPrometheus(exporter, tmp_path) as prometheus,
    ):
        code, metrics = await _one_shot(kube_api, _policy(tmp_path, prometheus.url))
    assert code == 1
    assert _evicted(fake_apiserver) == []
    (event,) = [
        e
        for e in fake_apiserver.list("events", "kube-system")
        if e["reason"] == "DeschedulingFailed"
    ]
    assert event["type"] == "Warning"
    assert 'sample for "c" has value 1.5 outside of <0; 1> interval' in event["message"]
    assert metrics[("kubelet_companion_descheduler_cycles_total", (("outcome", "failed"),))] == 1


async def test_a_prometheus_that_is_down_fails_a_one_shot_run(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """Nothing listens at the URL: the query is tried again, then the cycle fails (exit 1,
    outcome ``failed``, the Prometheus error counted, a Warning Event on the Lease saying
    why), and nothing is evicted on requests instead."""
    _cluster(fake_apiserver)
    policy = _policy(tmp_path, f"http://127.0.0.1:{free_port()}")
    code, metrics = await _one_shot(kube_api, policy, prometheus_timeout=2.0)
    assert code == 1
    assert _evicted(fake_apiserver) == []
    assert metrics[("kubelet_companion_descheduler_cycles_total", (("outcome", "failed"),))] == 1
    errors = (
        "kubelet_companion_descheduler_usage_source_errors_total",
        (("source", "Prometheus"),),
    )
    assert metrics[errors] == 1
    (event,) = [
        e
        for e in fake_apiserver.list("events", "kube-system")
        if e["reason"] == "DeschedulingFailed"
    ]
    assert event["involvedObject"]["kind"] == "Lease"
    assert "unable to capture prometheus metrics" in event["message"]


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        pytest.param(b"<html>proxy error</html>", 200, "the answer is not JSON", id="html"),
        pytest.param(
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            400,
            "HTTP 400: bad_data: parse error",
            id="bad-query",
        ),
        pytest.param(
            {"status": "success", "data": {"resultType": "matrix", "result": []}},
            200,
            'expected query results to be of type "vector", got "matrix" instead',
            id="matrix",
        ),
    ],
)
async def test_garbage_fails_a_one_shot_run_saying_why(  # noqa: PLR0917 - fixtures, then the table's columns
    fake_apiserver: FakeApiServer,
    kube_api: KubeApi,
    tmp_path: Path,
    body: bytes | dict[str, Any],
    status: int,
    reason: str,
) -> None:
    """An answer that is no vector of ratios fails the cycle (exit 1) with the reason."""
    _cluster(fake_apiserver)
    with QueryStandIn(body, status) as stand_in:
        code, _ = await _one_shot(kube_api, _policy(tmp_path, stand_in.url))
    assert code == 1
    assert _evicted(fake_apiserver) == []
    messages = [
        e["message"]
        for e in fake_apiserver.list("events", "kube-system")
        if e["reason"] == "DeschedulingFailed"
    ]
    assert any(reason in message for message in messages), messages


SECRET_REFERENCE = f"""\
    authToken:
      secretReference:
        namespace: {NAMESPACE}
        name: {TOKEN_SECRET}
"""


async def test_the_token_comes_from_the_policys_secret(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """``authToken.secretReference``: the Secret's ``prometheusAuthToken`` goes as a bearer
    token, read fresh before the query."""
    _cluster(fake_apiserver)
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": TOKEN_SECRET, "namespace": NAMESPACE},
            "data": {"prometheusAuthToken": base64.b64encode(b"s3cret").decode()},
        }
    )
    with QueryStandIn(vector(RATIOS)) as stand_in:
        policy = tmp_path / "policy.yaml"
        text = UPSTREAM_POLICY.format(url=stand_in.url)
        policy.write_text(
            text.replace(
                f'    url: "{stand_in.url}"\n', f'    url: "{stand_in.url}"\n{SECRET_REFERENCE}'
            )
        )
        code, _ = await _one_shot(kube_api, policy)
    assert code == 0
    assert stand_in.authorizations == ["Bearer s3cret"]
    assert _evicted_from(fake_apiserver) == ["a", "b"]


async def test_a_missing_token_secret_fails_the_cycle(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """No Secret: no query is sent without its token; the cycle fails naming the Secret."""
    _cluster(fake_apiserver)
    with QueryStandIn(vector(RATIOS)) as stand_in:
        policy = tmp_path / "policy.yaml"
        text = UPSTREAM_POLICY.format(url=stand_in.url)
        policy.write_text(
            text.replace(
                f'    url: "{stand_in.url}"\n', f'    url: "{stand_in.url}"\n{SECRET_REFERENCE}'
            )
        )
        code, _ = await _one_shot(kube_api, policy)
    assert code == 1
    assert stand_in.authorizations == []
    messages = [e["message"] for e in fake_apiserver.list("events", "kube-system")]
    assert any(f"unable to get {NAMESPACE}/{TOKEN_SECRET} secret" in m for m in messages), messages


async def test_a_token_file_and_tls_with_its_ca(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """``--prometheus-token-file`` and ``--prometheus-ca-file`` against a real Prometheus
    serving TLS: trusted through the CA file, the same decisions; without the CA the
    certificate is refused and the cycle fails; with verification off it works again."""
    _cluster(fake_apiserver)
    certificate = self_signed_certificate(tmp_path)
    token = tmp_path / "token"
    token.write_text("file-token\n")
    with (
        Exporter(METRIC, RATIOS) as exporter,
        RealPrometheus(exporter, tmp_path, certificate=certificate) as prometheus,
    ):
        policy = _policy(tmp_path, prometheus.url)
        trusted = {"prometheus_token_file": str(token), "prometheus_ca_file": str(certificate[0])}
        code, _ = await _one_shot(kube_api, policy, **trusted)
        assert (code, _evicted_from(fake_apiserver)) == (0, ["a", "b"])
        untrusted, _ = await _one_shot(kube_api, policy, prometheus_token_file=str(token))
        insecure = trusted | {"prometheus_ca_file": "", "prometheus_insecure_skip_tls_verify": True}
        skipped, _ = await _one_shot(kube_api, policy, **insecure)
    assert untrusted == 1
    assert skipped == 0
    messages = [e["message"] for e in fake_apiserver.list("events", "kube-system")]
    assert any("TLS certificate problem" in m for m in messages), messages
