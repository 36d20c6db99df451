"""The NodeReport writer against the fake API server with our CRD registered (status on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.report.controller import root_tasks as report_tasks
from agent.report.policy import WriteReason
from tests.harness.cgroups import MIB, pod_object
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.integration.report.conftest import NODE, REPORT_PATH, MakeRig, NodeProc, StartAgent

GIB = 2**30


async def test_the_agent_creates_its_report_owned_by_the_node(
    report_rig: MakeRig, report_server: FakeApiServer
) -> None:
    """The first write creates the NodeReport with an ownerReference to the Node (uid included),
    then writes its status through the status subresource as a merge patch."""
    rig = await report_rig()
    rig.proc.set(cpu_fraction=0.0, memory_fraction=0.5)
    await rig.controller.sample_once()
    assert await rig.step(cpu_fraction=0.25, memory_fraction=0.5) is WriteReason.FIRST
    report = rig.report()
    node_uid = report_server.get("nodes", NODE)["metadata"]["uid"]
    assert report["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": NODE,
            "uid": node_uid,
            "controller": False,
            "blockOwnerDeletion": False,
        }
    ]
    status = report["status"]
    assert status["usage"]["cpu"] == pytest.approx(1.0)  # 25% of 4 cores
    assert status["usage"]["memoryPercent"] == 50
    assert status["capacity"] == {"cpu": 4, "memory": 16 * GIB, "swap": 0}
    assert status["agentStopped"] is False
    assert status["heartbeatSeconds"] == 60
    assert status["allocatable"]["cpu"] > 0
    (write,) = rig.status_writes()
    assert write.content_type == "application/merge-patch+json"
    assert set(write.body) == {"status"}


async def test_writes_on_threshold_and_heartbeat_not_on_noise(report_rig: MakeRig) -> None:
    """Noise below 5 points of capacity is not written; a 5-point move of the smoothed value
    is, and so is the heartbeat after 60 s without a write (fake clock, fake samples)."""
    rig = await report_rig()
    rig.proc.set(cpu_fraction=0.2, memory_fraction=0.5)
    await rig.controller.sample_once()
    assert await rig.step(cpu_fraction=0.2, memory_fraction=0.5) is WriteReason.FIRST
    # Noise: raw swings of 20 points move the 0.1-weighted average by 2 points at most.
    for cpu in (0.4, 0.0, 0.4, 0.0):
        assert await rig.step(cpu_fraction=cpu, memory_fraction=0.52) is None
    assert len(rig.status_writes()) == 1
    # A real move: memory jumps to 100%, the average moves 5 points on the first sample.
    assert await rig.step(cpu_fraction=0.2, memory_fraction=1.0) is WriteReason.THRESHOLD
    assert len(rig.status_writes()) == 2
    assert rig.report()["status"]["usage"]["latest"]["memory"] == 16 * GIB
    # Quiet again (samples equal to the averages): nothing until the heartbeat, 60 s after
    # the last write (jitter 0 here).
    smoothed = rig.controller.tracker.node_smoothed
    assert smoothed is not None
    quiet = {
        "cpu_fraction": smoothed.cpu_cores / 4,
        "memory_fraction": smoothed.memory_working_set / (16 * GIB),
    }
    for _ in range(11):  # 55 s
        assert await rig.step(**quiet) is None
    assert len(rig.status_writes()) == 2
    assert await rig.step(**quiet) is WriteReason.HEARTBEAT
    assert len(rig.status_writes()) == 3


async def test_api_down_then_back_sends_exactly_one_write_with_the_latest_values(
    report_rig: MakeRig, report_server: FakeApiServer
) -> None:
    """While the API is down the agent keeps sampling; when it is back it sends one write,
    with the latest values, and no backlog."""
    rig = await report_rig(minWriteInterval="5s")  # each 5 s step's move is due
    rig.proc.set(cpu_fraction=0.1, memory_fraction=0.1)
    await rig.controller.sample_once()
    assert await rig.step(cpu_fraction=0.1, memory_fraction=0.1) is WriteReason.FIRST
    with report_server.outage():
        for memory in (0.9, 0.95, 0.99):  # each a threshold move, each attempt fails
            assert await rig.step(cpu_fraction=0.1, memory_fraction=memory) is not None
        failed = rig.status_writes(ok=False)[1:]
        assert failed
        assert all(request.status == 503 for request in failed)
    before = len(rig.status_writes(ok=False))
    assert await rig.step(cpu_fraction=0.1, memory_fraction=0.5) is WriteReason.RETRY
    after = rig.status_writes(ok=False)[before:]
    assert [request.status for request in after] == [200]
    assert len(rig.status_writes()) == 2
    latest = rig.report()["status"]["usage"]["latest"]
    assert latest["memory"] == 8 * GIB  # the sample taken after the outage, not one queued
    # Back in step: the next quiet sample writes nothing more.
    assert await rig.step(cpu_fraction=0.1, memory_fraction=0.5) is None
    assert len(rig.status_writes()) == 2


async def test_agent_stopped_on_stop_and_cleared_at_the_next_start(
    start_agent: StartAgent, report_server: FakeApiServer, tmp_path: Path
) -> None:
    """The graceful stop (SIGTERM: the RootTask's stop) writes agentStopped: true; the next
    start's first write clears it."""
    host = HostTree(tmp_path / "host")
    host.kernel()
    proc = NodeProc(host)
    proc.set(cpu_fraction=0.1, memory_fraction=0.3)
    report = {"sampleInterval": "100ms", "heartbeat": "1s"}

    def status() -> dict[str, object]:
        obj = report_server.try_get("nodereports", NODE)
        return dict((obj or {}).get("status") or {})

    agent = await start_agent([report_tasks], host=host, report=report)
    await agent.until(lambda: status().get("agentStopped") is False, "the first report")
    await agent.shutdown()
    assert status()["agentStopped"] is True

    again = await start_agent([report_tasks], host=host, report=report)
    await again.until(lambda: status().get("agentStopped") is False, "agentStopped cleared")
    written = [
        w.body["status"]["agentStopped"]
        for w in report_server.requests("PATCH", f"{REPORT_PATH}/status")
        if w.status == 200
    ]
    stopped_at = written.index(True)
    assert written[stopped_at + 1] is False  # the next start's first write
    assert written.count(True) == 1


async def test_a_pods_burst_and_its_end_are_written_before_the_heartbeat(
    report_rig: MakeRig, report_server: FakeApiServer
) -> None:
    """One pod's start-up burst (2 of 4 cores) and its end reach the report through pod
    writes, while node usage stays put, instead of waiting for the 60 s heartbeat: each as
    soon as the pod's smoothed value has moved 5 points of capacity and 15 s have passed
    since the last write."""
    rig = await report_rig()
    report_server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    uid = report_server.create(pod_object("web", None, namespace="shop", node=NODE))["metadata"][
        "uid"
    ]
    cpu_seconds = 0.0

    def pod_cpu(cores: float, seconds: float = 5.0) -> None:
        nonlocal cpu_seconds
        cpu_seconds += cores * seconds
        rig.cgroups.pod_usage(
            uid,
            "burstable",
            usage_usec=round(cpu_seconds * 1e6),
            memory_current=100 * MIB,
            inactive_file=0,
        )

    def web_cpu() -> float:
        (entry,) = rig.report()["status"]["pods"]
        assert (entry["namespace"], entry["name"], entry["uid"]) == ("shop", "web", uid)
        return float(entry["cpu"])

    quiet = {"cpu_fraction": 0.1, "memory_fraction": 0.3}
    pod_cpu(0.0)
    rig.proc.set(**quiet)
    await rig.controller.sample_once()
    pod_cpu(0.0)
    assert await rig.step(**quiet) is WriteReason.FIRST
    assert web_cpu() == 0.0

    reasons = []
    for _ in range(3):  # the burst: held for the minimum interval, then written
        pod_cpu(2.0)
        reasons.append(await rig.step(**quiet))
    assert reasons == [None, None, WriteReason.POD]
    assert web_cpu() == pytest.approx(2.0 * (1 - 0.9**3), abs=0.001)  # smoothed, 0.1 weight

    # The burst is over. The smoothed value falls by a tenth of itself per sample; it is
    # written again as soon as it has fallen 5 points of capacity (0.2 cores): 5 samples on.
    reasons = []
    for _ in range(5):
        pod_cpu(0.0)
        reasons.append(await rig.step(**quiet))
    assert reasons == [None, None, None, None, WriteReason.POD]
    assert web_cpu() == pytest.approx(2.0 * (1 - 0.9**3) * 0.9**5, abs=0.001)
    assert all(
        request.body["status"]["usage"]["cpuPercent"] == 10 for request in rig.status_writes()
    )
