"""``--json`` is one JSON document on stdout, whatever is logged: every command that has it,
run as its own process against the fake API server with a kubeconfig that turns TLS
verification off, so the agent logs its warning while the command runs. Logs are on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.harness import deschedulerstate, readiness_objects
from tests.harness.cgroups import MIB, CgroupTreeBuilder
from tests.harness.cli import run_cli
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.nodereport import NodeProc
from tests.harness.ports import free_port

NODE = "node-1"
TLS_WARNING = "TLS verification is off (insecure-skip-tls-verify)"
POD_UID = "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b"
POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  plugins:
    balance:
      enabled: [RemoveDuplicates]
"""


def insecure_kubeconfig(server: FakeApiServer, path: Path) -> Path:
    """The fake API server's kubeconfig with ``insecure-skip-tls-verify: true``: the client
    still talks to it (plain HTTP), and the agent logs that TLS is not verified."""
    written = server.write_kubeconfig(path)
    document = json.loads(written.read_text())
    document["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    written.write_text(json.dumps(document))
    return written


def agent_config(tmp_path: Path, kubeconfig: Path, **extra: Any) -> Path:
    """A node with a fixture /proc and cgroup tree (one pod's cgroup), this kubeconfig."""
    host = HostTree(tmp_path / "host").standard()
    NodeProc(host).set(cpu_fraction=0.5, memory_fraction=0.25)
    tree = CgroupTreeBuilder(host.root / "sys/fs/cgroup", "systemd")
    tree.pod_usage(POD_UID, "burstable", usage_usec=10**6, memory_current=64 * MIB, inactive_file=0)
    document = {
        "nodeName": NODE,
        "kubeconfig": str(kubeconfig),
        "stateDir": str(tmp_path / "state"),
        "hostPaths": {"proc": str(host.root / "proc"), "sys": str(host.root / "sys")},
        "shutdownGracePeriod": "30s",
        "metricsBindAddress": f"127.0.0.1:{free_port()}",
        **extra,
    }
    path = tmp_path / "agent.yaml"
    path.write_text(json.dumps(document))
    return path


def _node_command(*args: str) -> Callable[[FakeApiServer, Path], list[str]]:
    def argv(server: FakeApiServer, tmp_path: Path) -> list[str]:
        server.create(readiness_objects.node(NODE))
        kubeconfig = insecure_kubeconfig(server, tmp_path / "kubeconfig")
        return [*args, "--json", "--config", str(agent_config(tmp_path, kubeconfig))]

    return argv


def _descheduler_dry_run(server: FakeApiServer, tmp_path: Path) -> list[str]:
    server.create(deschedulerstate.node(NODE))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    kubeconfig = insecure_kubeconfig(server, tmp_path / "kubeconfig")
    return [
        "descheduler",
        "--policy-config-file", str(policy),
        "--kubeconfig", str(kubeconfig),
        "--dry-run", "--output", "json",
        "--metrics-bind-address", "127.0.0.1:0",
    ]  # fmt: skip


COMMANDS = {
    "doctor": _node_command("doctor"),
    "shutdown plan": _node_command("shutdown", "plan"),
    "swap report": _node_command("swap", "report"),
    "readiness": _node_command("readiness"),
    "report": _node_command("report", "--interval", "50ms"),
    "descheduler --dry-run": _descheduler_dry_run,
}


@pytest.mark.parametrize("command", COMMANDS)
def test_json_output_parses_while_a_warning_is_logged(
    fake_apiserver: FakeApiServer, tmp_path: Path, command: str
) -> None:
    """The TLS warning is logged during the run, on stderr; stdout is exactly one JSON
    document (it parses whole), with no log line before or after it."""
    result = run_cli(*COMMANDS[command](fake_apiserver, tmp_path))
    assert TLS_WARNING in result.stderr, result.stderr
    assert TLS_WARNING not in result.stdout
    assert isinstance(json.loads(result.stdout), dict), result.stdout


def test_offline_plan_json_parses_while_a_report_is_named_on_stderr(tmp_path: Path) -> None:
    """``descheduler plan --output json``: a NodeReport it does not believe is named on stderr,
    and stdout is the plan alone."""
    items = [
        deschedulerstate.node(NODE),
        {"apiVersion": "kubelet-companion.io/v1alpha1", "kind": "NodeReport",
         "metadata": {"name": NODE}, "status": {}},
    ]  # fmt: skip
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items[:1]}))
    reports = tmp_path / "reports.json"
    reports.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items[1:]}))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    result = run_cli(
        "descheduler", "plan", "--snapshot", str(snapshot), "--node-reports", str(reports),
        "--policy-config-file", str(policy), "--output", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"NodeReport {NODE} not believed" in result.stderr
    assert json.loads(result.stdout)["evictions"] == []
