"""``kubelet-companion report`` and doctor's report line: the real CLI process, node-only and
against the fake API server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent.kubesemantics.timestamps import rfc3339
from agent.node.reportrecord import ReportRecord, save_report_record
from agent.runtime.status import ReadinessStatus, ShutdownStatus, SwapStatus
from tests.harness.cgroups import (
    MIB,
    QOS,
    CgroupTreeBuilder,
    CgroupV1TreeBuilder,
    container_id,
    pod_object,
)
from tests.harness.cli import run_cli
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.nodereport import NodeProc
from tests.integration.report.conftest import MakeRig

NODE = "node-1"
WEB = "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b"
STRAY = "3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
DB = "2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"


def _run(config: Path, *args: str) -> Any:
    return run_cli(*args, "--config", str(config))


def _node(
    tmp_path: Path,
    kubeconfig: str = "",
    *,
    pod_uids: tuple[str, ...] = (WEB, STRAY),
    host_dir: str = "host",
) -> Path:
    host = HostTree(tmp_path / host_dir).standard()
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
    assert "shutdown" not in status
    assert json.loads(result.stdout)["fromAgent"] == {
        "sections": {},
        "note": "no running agent has published them",
    }
    text = _run(_node(tmp_path), "report", "--interval", "50ms")
    assert text.returncode == 0
    assert "memory" in text.stdout
    assert WEB in text.stdout
    assert "readiness, shutdown, swap: no running agent has published them" in text.stdout


async def test_report_shows_what_the_running_agent_last_published(
    report_rig: MakeRig, tmp_path: Path
) -> None:
    """The gate, shutdown and swap sections the report controller saved with its last write
    (from the status board) are shown by the command, with the time they were saved."""
    rig = await report_rig()
    now = rig.clock.now()
    rig.board.publish_readiness(ReadinessStatus(gate_held=True, waiting_for=("pod:cni-0",)))
    rig.board.publish_shutdown(
        ShutdownStatus("inProgress", start_time=now, phase_priority=0, budget_end=now + 30)
    )
    rig.board.publish_swap(SwapStatus("LimitedSwap", True, True, ("default/web-0/app",)))
    rig.proc.set(cpu_fraction=0.1, memory_fraction=0.5)
    await rig.controller.sample_once()
    assert await rig.step(cpu_fraction=0.1, memory_fraction=0.5) is not None
    saved_at = rig.clock.now()
    published = rig.report()["status"]
    config = _node(tmp_path, host_dir="cli-host")  # the agent's stateDir, node-only

    result = await asyncio.to_thread(_run, config, "report", "--json", "--interval", "50ms")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    for key in ("readiness", "shutdown", "swap"):
        assert output["status"][key] == published[key]
    assert output["status"]["readiness"] == {"gateHeld": True, "waitingFor": ["pod:cni-0"]}
    assert output["status"]["shutdown"]["state"] == "inProgress"
    assert output["fromAgent"]["time"] == rfc3339(saved_at)
    assert output["fromAgent"]["ageSeconds"] > 0  # the rig's clock stands in the past
    text = await asyncio.to_thread(_run, config, "report", "--interval", "50ms")
    assert text.returncode == 0, text.stderr
    assert "from the running agent" in text.stdout
    assert "gate held, waiting for pod:cni-0" in text.stdout
    assert "shutdown   inProgress" in text.stdout
    assert "1 drifted (default/web-0/app)" in text.stdout


def test_report_with_a_cluster_names_pods_and_leaves_strays_out(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """With a cluster: allocatable from the Node, pods named, unclaimed cgroups left out, and no
    request other than reads."""
    fake_apiserver.kubelet(NODE)
    created = fake_apiserver.create(pod_object("web-0", WEB, node=NODE))
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


def test_report_and_swap_report_find_the_same_pods_on_a_hybrid_v1_node(tmp_path: Path) -> None:
    """One cgroup finder for every command: on a hybrid cgroup v1 node (cgroupfs driver) the
    NodeReport command lists every pod cgroup with its v1 usage, and ``swap report`` finds the
    containers of exactly those pods."""
    host = HostTree(tmp_path / "host")
    host.swaps()
    host.kernel()
    host.user_namespace(False)
    host.own_cgroup_v1()
    NodeProc(host).set(cpu_fraction=0.5, memory_fraction=0.25)
    tree = CgroupV1TreeBuilder(host.paths.cgroup_root, "cgroupfs")
    placements: dict[str, QOS] = {WEB: "burstable", STRAY: "besteffort", DB: "guaranteed"}
    for seed, (uid, qos) in enumerate(placements.items(), start=1):
        tree.add_container(uid, qos, container_id(seed), usage_in_bytes=seed * MIB)
        tree.pod_usage(uid, qos, usage_ns=10**9, usage_in_bytes=64 * MIB, total_inactive_file=0)
    config = tmp_path / "agent.yaml"
    paths = {"proc": str(host.paths.proc), "sys": str(host.paths.sys)}
    config.write_text(json.dumps({"nodeName": NODE, "hostPaths": paths}))

    report = _run(config, "report", "--json", "--interval", "50ms")
    assert report.returncode == 0, report.stderr
    pods = json.loads(report.stdout)["status"]["pods"]
    assert {pod["uid"] for pod in pods} == set(placements)
    assert all(pod["memory"] == 64 * MIB for pod in pods)
    swap = _run(config, "swap", "report", "--json")
    assert swap.returncode == 0, swap.stderr
    found = json.loads(swap.stdout)
    assert found["node"]["kubepods_cgroup"] == "memory/kubepods"
    assert {cgroup["pod_uid"] for cgroup in found["unmapped_cgroups"]} == set(placements)
