"""The gate from the outside: the ``readiness`` command and a real ``agent`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli import main
from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import controller_ref
from tests.harness.localhttp import get, get_when_ok
from tests.harness.ports import free_port
from tests.harness.readiness_objects import GATE, KEYS, daemon_set, node, pod, taint
from tests.harness.waiting import wait_until_blocking


def _config(tmp_path: Path, server: FakeApiServer, extra: str = "") -> Path:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    path = tmp_path / "agent.yaml"
    path.write_text(f"nodeName: node-1\nkubeconfig: {kubeconfig}\nstateDir: {tmp_path}\n{extra}")
    return path


def _seed_waiting_node(server: FakeApiServer) -> None:
    server.create(node(taints=[taint()], labels={"pool": "general"}))
    cni = server.create(daemon_set("cni"))
    server.create(daemon_set("gpu", node_selector={"pool": "gpu"}))
    server.create(daemon_set("proxy"))
    server.create(pod("cni-abcde", owner=controller_ref(cni), ready=False))
    server.create(pod("csi", annotations={f"{KEYS.csi_annotation_prefix}x": "ebs.csi.aws.com"}))


def test_the_command_prints_each_check_and_the_verdict(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`readiness` lists what each check waits for on the node, then NOT READY."""
    _seed_waiting_node(fake_apiserver)
    assert main(["readiness", "--config", str(_config(tmp_path, fake_apiserver))]) == 0
    out = capsys.readouterr().out
    assert f"node node-1: gate taint {GATE} present" in out
    assert "WAIT  kube-system/proxy: no pod on this node yet" in out
    assert "ok    kube-system/cni: pod kube-system/cni-abcde" in out
    assert "skip  kube-system/gpu: not expected here (nodeSelector pool=gpu" in out
    assert "WAIT  kube-system/cni-abcde: ContainersNotReady" in out
    assert "WAIT  ebs.csi.aws.com: no CSINode for this node (for kube-system/csi)" in out
    assert out.rstrip().endswith(f"verdict: NOT READY: {GATE} stays on the node")


def test_the_command_prints_json(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`readiness --json` gives the same report as a JSON document."""
    _seed_waiting_node(fake_apiserver)
    assert main(["readiness", "--json", "--config", str(_config(tmp_path, fake_apiserver))]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is False
    assert report["tainted"] is True
    missing = [
        d["name"] for d in report["checks"]["daemonSets"] if d["required"] and not d["scheduled"]
    ]
    assert missing == ["kube-system/proxy"]


def test_the_command_fails_cleanly_for_an_unknown_node(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node that does not exist is a runtime failure (exit 1) with a clear message."""
    config = _config(tmp_path, fake_apiserver)
    assert main(["readiness", "--config", str(config), "--node", "ghost"]) == 1
    assert "node ghost does not exist" in capsys.readouterr().err


def test_a_bad_config_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A config error in the readiness section exits 2 and names the field."""
    path = tmp_path / "agent.yaml"
    path.write_text("readiness: {mode: sometimes}\n")
    assert main(["readiness", "--config", str(path)]) == 2
    assert "readiness.mode" in capsys.readouterr().err


def _gate_lifted_on(url: str) -> str | None:
    """The metrics at ``url`` once they show the gate lifted."""
    status, metrics = get(url, timeout=1)
    return (
        metrics
        if status == 200 and "kubelet_companion_readiness_gate_held 0.0" in metrics
        else None
    )


def test_the_agent_process_lifts_the_gate(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """`kubelet-companion agent` against the API server removes the taint and reports it."""
    fake_apiserver.create(node(taints=[taint("keep/me"), taint()]))
    port = free_port()
    # Shutdown off: without a system bus its logind lock would keep /readyz at 503.
    config = _config(
        tmp_path, fake_apiserver, f"metricsBindAddress: 127.0.0.1:{port}\nshutdownGracePeriod: 0s\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
        env={**os.environ, "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lifted = fake_apiserver.wait_for(
            "nodes", "node-1", lambda n: n is not None and GATE not in str(n["spec"]), timeout=30
        )
        assert lifted is not None
        assert [t["key"] for t in lifted["spec"]["taints"]] == ["keep/me"]
        assert BOOTSTRAP_COMPLETED_ANNOTATION in lifted["metadata"]["annotations"]
        metrics = wait_until_blocking(
            lambda: _gate_lifted_on(f"http://127.0.0.1:{port}/metrics"),
            "the lifted gate on /metrics",
            20,
            interval=0.1,
        )
        assert "kubelet_companion_readiness_gate_wait_seconds" in metrics
        assert "watch:readiness-daemonsets-kube-system" in get_when_ok(
            f"http://127.0.0.1:{port}/readyz?verbose", 20
        )
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    assert "gate taint removed" in output
