"""From the command line: a policy naming a metrics source it cannot be served is refused
before anything connects (exit 2, with the field's path), and ``descheduler plan`` reads
the sources' answers from ``--usage`` (never exit 0 on a plan that ignored its source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.descheduler.live.command import with_in_cluster_token
from agent.descheduler.options import DeschedulerOptions
from agent.descheduler.policyfile import parse_policy_text
from agent.kube.connection import SERVICE_ACCOUNT_TOKEN
from tests.harness.deschedulerstate import node, pod
from tests.harness.kubeobjects import node_metrics, pod_metrics
from tests.harness.prometheus import vector
from tests.integration.descheduler.test_cli import _run
from tests.integration.descheduler.test_prometheus import UPSTREAM_POLICY

QUERY = "e2e_node_cpu_usage_ratio"
RATIOS = {"a": 0.9, "b": 0.6, "c": 0.1, "d": 0.15}
METRICS_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
{providers}
profiles:
- name: default
  pluginConfig:
  - name: "LowNodeUtilization"
    args:
      thresholds: {{cpu: 20}}
      targetThresholds: {{cpu: 50}}
      metricsUtilization: {{metricsServer: true}}
  plugins:
    balance:
      enabled: ["LowNodeUtilization"]
"""


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _snapshot(tmp_path: Path) -> str:
    items: list[dict[str, Any]] = []
    for name in RATIOS:
        items += [node(name), *(pod(f"{name}-{i}", name) for i in range(3))]
    return _write(tmp_path / "snapshot.json", json.dumps({"kind": "List", "items": items}))


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        pytest.param(
            UPSTREAM_POLICY.format(url="http://prometheus:9090").replace(
                'metricsProviders:\n- source: Prometheus\n  prometheus:\n    url: "http://prometheus:9090"\n',
                "",
            ),
            "profiles[0].pluginConfig[1].args.metricsUtilization.source",
            id="prometheus-without-its-provider",
        ),
        pytest.param(
            METRICS_POLICY.format(providers=""),
            "profiles[0].pluginConfig[0].args.metricsUtilization.metricsServer",
            id="metrics-server-without-its-provider",
        ),
        pytest.param(
            UPSTREAM_POLICY.format(url="{prometheus}"),
            "metricsProviders[0].prometheus.url",
            id="an-unrendered-url",
        ),
    ],
)
def test_a_source_that_cannot_be_served_exits_2_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, path: str
) -> None:
    """Exit 2 naming the field, before any connection (no kubeconfig is even given)."""
    code, _, err = _run(capsys, "--policy-config-file", _write(tmp_path / "p.yaml", policy))
    assert code == 2
    assert path in err
    assert "Traceback" not in err


def _plan(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, policy: str, *extra: str
) -> tuple[int, str, str]:
    return _run(
        capsys,
        "plan",
        "--snapshot",
        _snapshot(tmp_path),
        "--policy-config-file",
        _write(tmp_path / "policy.yaml", policy),
        "--output",
        "json",
        *extra,
    )


def test_plan_without_the_sources_answers_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A snapshot carries no usage: without ``--usage`` the plan names what it lacks."""
    code, out, err = _plan(capsys, tmp_path, UPSTREAM_POLICY.format(url="http://p:9090"))
    assert (code, out) == (2, "")
    assert f"--usage: the policy reads Prometheus query '{QUERY}'" in err


def test_plan_reads_a_prometheus_answer_from_the_usage_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer as Prometheus sent it: one eviction per over-utilized node, as upstream."""
    usage = _write(tmp_path / "usage.json", json.dumps({"prometheus": {QUERY: vector(RATIOS)}}))
    code, out, err = _plan(
        capsys, tmp_path, UPSTREAM_POLICY.format(url="http://p:9090"), "--usage", usage
    )
    assert code == 0, err
    assert [(e["pod"], e["node"]) for e in json.loads(out)["evictions"]] == [
        ("default/a-0", "a"),
        ("default/b-0", "b"),
    ]


def test_plan_on_a_bad_answer_fails_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value outside [0, 1] in the file: no plan, exit 1, upstream's words on stderr."""
    answer = vector({**RATIOS, "c": 1.5})
    usage = _write(tmp_path / "usage.json", json.dumps({"prometheus": {QUERY: answer}}))
    code, out, err = _plan(
        capsys, tmp_path, UPSTREAM_POLICY.format(url="http://p:9090"), "--usage", usage
    )
    assert (code, out) == (1, "")
    assert 'sample for "c" has value 1.5 outside of <0; 1> interval' in err


def test_plan_reads_node_and_pod_metrics_from_the_usage_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NodeMetrics and PodMetrics as ``kubectl get --raw`` prints them: a at 3 CPUs of 4 is
    over, and its pods go by their PodMetrics until a is at its target."""
    nodes = {"a": "3", "b": "400m", "c": "1200m", "d": "1200m"}
    usage = {
        "nodeMetrics": {"items": [node_metrics(n, cpu) for n, cpu in nodes.items()]},
        "podMetrics": {
            "items": [
                pod_metrics(f"a-{i}", {"app": {"cpu": "600m", "memory": "1Mi"}}) for i in range(3)
            ]
        },
    }
    path = _write(tmp_path / "usage.json", json.dumps(usage))
    providers = "metricsProviders:\n- source: KubernetesMetrics"
    code, out, err = _plan(
        capsys, tmp_path, METRICS_POLICY.format(providers=providers), "--usage", path
    )
    assert code == 0, err
    assert [e["pod"] for e in json.loads(out)["evictions"]] == ["default/a-0", "default/a-1"]


@pytest.mark.parametrize(
    ("source", "secret", "token_file", "expected"),
    [
        pytest.param("in-cluster", False, "", str(SERVICE_ACCOUNT_TOKEN), id="pod-no-secret"),
        pytest.param("in-cluster", True, "", "", id="pod-with-secret"),
        pytest.param("in-cluster", False, "/t", "/t", id="pod-with-a-token-file"),
        pytest.param("kubeconfig /k", False, "", "", id="outside-a-pod"),
    ],
)
def test_in_a_pod_the_service_account_token_goes_to_prometheus(
    source: str, secret: bool, token_file: str, expected: str
) -> None:
    """As upstream: in a pod, without a Secret in the policy, the pod's own token is sent;
    a Secret or a token file given wins; outside a pod no token is made up."""
    url = "http://p:9090"
    text = UPSTREAM_POLICY.format(url=url)
    if secret:
        reference = "    authToken: {secretReference: {namespace: ns, name: t}}\n"
        text = text.replace(f'    url: "{url}"\n', f'    url: "{url}"\n{reference}')
    policy = parse_policy_text(text, "<test>")
    options = DeschedulerOptions(prometheus_token_file=token_file)
    assert with_in_cluster_token(options, policy, source).prometheus_token_file == expected
