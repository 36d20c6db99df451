"""The components as the manifests run them: each sends its own User-Agent (which is how the
RBAC proof tells their requests apart), and the descheduler, with the container args the
cronjob overlay renders, keeps its Lease in the namespace its Role covers."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.harness import kubeobjects
from tests.harness.cli import run_cli
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kustomize import DESCHEDULER_ACCOUNT, MANIFESTS, NAMESPACE, one, render
from tests.harness.rbac.authorizer import grants_for, not_allowed
from tests.harness.rbac.recorder import component_of
from tests.harness.rbac.requestinfo import request_attributes
from tests.integration.descheduler.conftest import COOLDOWN_POLICY, owned_pod


def _api_requests(server: FakeApiServer) -> list:
    return [r for r in server.requests() if r.path.startswith(("/api/", "/apis/"))]


def test_the_cronjob_descheduler_as_rendered_keeps_its_lease_where_its_role_allows(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A one-shot run with the CronJob's rendered args (the namespace from the downward API)
    and a cooldown policy sends every request as the descheduler, keeps the churn guard's
    Lease in kubelet-companion, and the cronjob overlay's RBAC allows all of it."""
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    for name in ("n2", "n3"):
        fake_apiserver.kubelet(name)
    kubelet = fake_apiserver.kubelet("n1")
    for name in ("web-0", "web-1", "web-2"):
        fake_apiserver.create(owned_pod(name, "n1", "web"))
        kubelet.set_ready("default", name)
    cronjob = one(render(MANIFESTS / "overlays" / "cronjob"), "CronJob", DESCHEDULER_ACCOUNT)
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    config, policy = tmp_path / "descheduler.yaml", tmp_path / "policy.yaml"
    config.write_text(yaml.safe_dump({"metricsBindAddress": "127.0.0.1:0"}))
    policy.write_text(COOLDOWN_POLICY)
    args = [
        arg.replace("$(POD_NAMESPACE)", NAMESPACE)
        .replace("/etc/kubelet-companion/descheduler.yaml", str(config))
        .replace("/etc/kubelet-companion/policy.yaml", str(policy))
        for arg in container["args"]
    ]
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")

    result = run_cli(*args, "--kubeconfig", str(kubeconfig))

    assert result.returncode == 0, result.stderr
    sent = _api_requests(fake_apiserver)
    assert {component_of(r.header("User-Agent")) for r in sent} == {"descheduler"}
    leases = [r.path for r in sent if "/leases" in r.path]
    assert leases, "the cooldown's memory was not written"
    assert all(
        path.startswith(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/") for path in leases
    )
    attributes = [request_attributes(r.method, r.path, r.query) for r in sent]
    grants = grants_for(render(MANIFESTS / "overlays" / "cronjob"), NAMESPACE, DESCHEDULER_ACCOUNT)
    assert not_allowed(grants, [a for a in attributes if a is not None]) == []


def test_an_agent_command_sends_the_agents_user_agent(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """`kubelet-companion shutdown plan` (any agent-side command, as the daemon) talks to the
    API server as kubelet-companion-agent/<version>."""
    fake_apiserver.create(kubeobjects.node("n1"))
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "agent.yaml"
    config.write_text(yaml.safe_dump({"nodeName": "n1", "kubeconfig": str(kubeconfig)}))

    result = run_cli("shutdown", "plan", "--config", str(config))

    assert result.returncode == 0, result.stderr
    sent = _api_requests(fake_apiserver)
    assert sent
    assert {component_of(r.header("User-Agent")) for r in sent} == {"agent"}
