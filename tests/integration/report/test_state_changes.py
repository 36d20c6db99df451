"""State changes reach the NodeReport within a second: the readiness gate's lift, wired as the
agent wires it (the readiness controller publishes, the report controller is woken)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.readiness.controller import root_tasks as readiness_tasks
from agent.report.controller import root_tasks as report_tasks
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.kubeobjects import controller_ref
from tests.harness.readiness_objects import GATE, daemon_set, pod, taint
from tests.harness.waiting import wait_until
from tests.integration.report.conftest import NODE, NodeProc, StartAgent

JSON = dict[str, Any]


def _readiness(server: FakeApiServer) -> JSON:
    obj = server.try_get("nodereports", NODE) or {}
    return dict((obj.get("status") or {}).get("readiness") or {})


def _gated(server: FakeApiServer) -> bool:
    return GATE in [t["key"] for t in server.get("nodes", NODE)["spec"].get("taints") or []]


async def test_a_gate_lift_reaches_the_report_within_a_second(
    report_server: FakeApiServer, start_agent: StartAgent, tmp_path: Path
) -> None:
    """While the gate is held the report says so and names what it waits for; once the taint
    is lifted the report shows it within 1 s, long before the 60 s heartbeat."""
    server = report_server
    server.patch("nodes", NODE, {"spec": {"taints": [taint()]}})
    ds = server.create(daemon_set("cni"))
    server.create(pod("cni-abcde", owner=controller_ref(ds), ready=False))
    host = HostTree(tmp_path / "host")
    host.kernel()
    NodeProc(host).set(cpu_fraction=0.1, memory_fraction=0.3)
    agent = await start_agent(
        [readiness_tasks, report_tasks],
        host=host,
        # Samples every 30 s and a 60 s heartbeat: only the change itself can write in time.
        report={"sampleInterval": "30s"},
    )
    await agent.until(lambda: _readiness(server).get("gateHeld") is True, "gate held reported")
    assert _readiness(server)["waitingFor"] == ["pod:kube-system/cni-abcde"]

    kubelet = server.kubelet(NODE, register_node=False)
    kubelet.set_ready("kube-system", "cni-abcde")
    await wait_until(lambda: not _gated(server), "the gate taint is removed", timeout=10)
    await wait_until(
        lambda: _readiness(server).get("gateHeld") is False,
        "the lift in the NodeReport",
        timeout=1.0,
    )
    assert _readiness(server)["waitingFor"] == []
