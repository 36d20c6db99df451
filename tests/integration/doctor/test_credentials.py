"""doctor end to end: it names the agent's credentials and warns when the own-node admission
policy would deny the agent's writes (its token bound to no node, or to another one)."""

import json
from pathlib import Path

import pytest

from tests.harness.cli import run_cli
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.tokens import service_account_token


@pytest.mark.parametrize(
    ("token", "credentials", "warning"),
    [
        pytest.param(
            service_account_token(node="n1"), "bound to node n1, expires ", None, id="node-bound"
        ),
        pytest.param(
            service_account_token(node="n1", pod="agent-x7k2p"),
            "bound to pod agent-x7k2p on node n1",
            None,
            id="pod-bound",
        ),
        pytest.param(
            service_account_token(), "bound to no node", "names no node", id="unbound-token"
        ),
        pytest.param(
            service_account_token(node="n2"), "bound to node n2", "bound to node n2", id="n2"
        ),
    ],
)
def test_doctor_names_the_tokens_node_and_warns_when_writes_would_be_denied(
    fake_apiserver: FakeApiServer,
    tmp_path: Path,
    token: str,
    credentials: str,
    warning: str | None,
) -> None:
    """For node n1: a token bound to n1 (alone or through the agent's pod) is fine; one bound
    to no node or to n2 is a warning that says the agent's writes will be denied."""
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig", token=token)
    config = tmp_path / "agent.yaml"
    config.write_text(f"nodeName: n1\nkubeconfig: {kubeconfig}\n")
    result = run_cli("doctor", "--json", "--config", str(config))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["sections"]["cluster"]["mode"] == "reachable"
    assert credentials in report["sections"]["cluster"]["credentials"]
    denied = [w for w in report["warnings"] if "admission policy" in w]
    if warning is None:
        assert denied == []
    else:
        (line,) = denied
        assert warning in line
        assert "kubectl create token kubelet-companion-agent" in line
