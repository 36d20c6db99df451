"""``kubelet-companion report`` and doctor's report line: the real CLI process, node-only and
against the fake API server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent.node.reportrecord import ReportRecord, save_report_record
from tests.harness.cgroups import MIB, CgroupTreeBuilder, pod_object
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.nodereport import NodeProc

NODE = "node-1"
WEB = "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b"
STRAY = "3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"


def _run(config: Path, *args: str) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": "", "HOME": "/nonexistent"},
        check=False,
    )


def _node(
    tmp_path: Path, kubeconfig: str = "", *, pod_uids: tuple[str, ...] = (WEB, STRAY)
) -> Path:
    host = HostTree(tmp_path / "host").standard()
    NodeProc(host).set(cpu_fraction=0.5, memory_fraction=0.25)
    tree = CgroupTreeBuilder(host.root / "sys/fs/cgroup", "systemd")
    for uid in pod_uids:
        tree.pod_usage(uid, "burstable", usage_usec=10**6, memory_current=64 * MIB, inactive_file=0)
    document = {
        "nodeName": NODE,
        "kubeconfig": kubeconfig,
        "stateDir": str(tmp_path / "state"),
        "hostPaths": {"proc": str(host.root / "proc"), "sys": str(host.root / "sys")},
    }
    path = tmp_path / "agent.yaml"
    path.write_text(json.dumps(document))
    return path


def test_report_node_only_prints_usage_and_pods_by_uid(tmp_path: Path) -> None:
    """Without a cluster the command still shows usage, capacity and the pod cgroups (by uid),
    and writes nothing."""
    result = _run(_node(tmp_path), "report", "--json", "--interval", "50ms")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)["status"]
    assert status["capacity"]["memory"] == 16 * 2**30
    assert status["usage"]["memoryPercent"] == 25
    assert sorted(pod["uid"] for pod in status["pods"]) == sorted([WEB, STRAY])
    assert "allocatable" not in status
    assert "readiness" not in status
    text = _run(_node(tmp_path), "report", "--interval", "50ms")
    assert text.returncode == 0
    assert "memory" in text.stdout
    assert WEB in text.stdout


def test_report_with_a_cluster_names_pods_and_leaves_strays_out(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """With a cluster: allocatable from the Node, pods named, unclaimed cgroups left out, and no
    request other than reads."""
    fake_apiserver.kubelet(NODE)
    created = fake_apiserver.create(pod_object("web-0", WEB, node_name=NODE))
    uid = created["metadata"]["uid"]  # the server assigns it
    kubeconfig = str(fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    config = _node(tmp_path, kubeconfig, pod_uids=(uid, STRAY))
    result = _run(config, "report", "--json", "--interval", "50ms")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)["status"]
    assert [(p["namespace"], p["name"], p["uid"]) for p in status["pods"]] == [
        ("default", "web-0", uid)
    ]
    assert status["allocatable"]["cpu"] > 0
    assert {r.method for r in fake_apiserver.requests()} == {"GET"}


def test_report_bad_interval_is_a_usage_error(tmp_path: Path) -> None:
    """A bad --interval exits 2 with a message, no traceback."""
    result = _run(_node(tmp_path), "report", "--interval", "5")
    assert result.returncode == 2
    assert "interval" in result.stderr
    assert "Traceback" not in result.stderr


def test_doctor_shows_the_last_report_write(tmp_path: Path) -> None:
    """doctor's report section: last written, size and errors, from the agent's state file."""
    config = _node(tmp_path)
    save_report_record(
        tmp_path / "state" / "report-state.json",
        ReportRecord(last_written=1_790_000_000.0, size_bytes=12345, errors=2, last_error="boom"),
    )
    result = _run(config, "doctor", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["sections"]["report"] == {
        "enabled": True,
        "last_written": "2026-09-21T14:13:20Z",
        "size_bytes": 12345,
        "errors": 2,
        "last_error": "boom",
    }
    assert any("NodeReport write" in warning for warning in document["warnings"])
