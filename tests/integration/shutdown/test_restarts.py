"""What the agent finds at start: a reboot clears the taint, a killed agent resumes in time."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.config.shutdown import PriorityBucket
from agent.kubesemantics.timestamps import parse_rfc3339
from agent.node.statefile import write_json_atomic
from agent.shutdown.record import ShutdownStatus, begin_record
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.logind import LogindHarness
from tests.harness.ports import free_port
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import (
    NODE,
    TAINT_KEY,
    ShutdownRig,
    config_text,
    ensure_priority_classes,
    until,
)

pytestmark = pytest.mark.root

OLD_BOOT = "0ld0b007-0000-4000-8000-000000000000"
NEW_BOOT = "5b1f3c9e-0000-4000-8000-000000000001"


@pytest.mark.parametrize("status", [ShutdownStatus.FINISHED, ShutdownStatus.RUNNING])
async def test_reboot_clears_our_taint_and_completes_the_record(
    logind_harness: LogindHarness,
    rig_factory: Callable[..., Any],
    tmp_path: Path,
    status: ShutdownStatus,
) -> None:
    """A record from another boot: our taint removed, record complete, times kept."""
    old = begin_record(
        (PriorityBucket(0, 10),),
        start_time=1_700_000_000.0,
        start_monotonic=5.0,
        boot_id=OLD_BOOT,
        mode="delete",
    )
    old = old.closed(status, end_time=1_700_000_009.5, why="phases-done")
    if status is ShutdownStatus.RUNNING:  # killed before it could record an end
        old = dataclasses.replace(old, end_time=None, released_by="")

    def prepare(rig: ShutdownRig) -> None:
        write_json_atomic(rig.config.shutdown_state_file, old.to_json())
        assert rig.server is not None
        rig.server.patch(
            "nodes",
            NODE,
            {
                "spec": {
                    "taints": [
                        {"key": "example.com/keep-me", "effect": "NoExecute"},
                        {"key": TAINT_KEY, "effect": "NoSchedule"},
                    ]
                }
            },
        )

    rig: ShutdownRig = await rig_factory(buckets=[(0, 10)], boot_id=NEW_BOOT, prepare=prepare)
    await until(lambda: not rig.has_taint(), 10, "our taint to be removed")
    assert rig.taints() == [{"key": "example.com/keep-me", "effect": "NoExecute"}]
    await until(lambda: rig.state()["status"] == "complete", 5, "the completed record")
    state = rig.state()
    assert state["startTime"] == "2023-11-14T22:13:20.000000Z"
    assert state["bootID"] == OLD_BOOT
    assert rig.metric("kubelet_companion_graceful_shutdown_start_time_seconds") == 1_700_000_000.0
    expected_end = 1_700_000_009.5 if status is ShutdownStatus.FINISHED else 0
    assert rig.metric("kubelet_companion_graceful_shutdown_end_time_seconds") == expected_end
    assert rig.pod_deletions() == []
    await rig.wait_for_lock()  # and the agent is ready for the next shutdown


@pytest.mark.parametrize(
    ("age", "closed_as"),
    [
        pytest.param(1_000_000.0, "complete", id="budget-long-over"),
        pytest.param(1.0, "cancelled", id="recent-and-logind-not-preparing"),
    ],
)
async def test_unreadable_boot_id_still_clears_our_taint(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any], age: float, closed_as: str
) -> None:
    """With no boot ID, a record whose budget long ended (or that logind disowns) is cleared."""
    started = time.time() - age
    old = begin_record(
        (PriorityBucket(0, 10),),
        start_time=started,
        start_monotonic=5.0,
        boot_id=OLD_BOOT,
        mode="delete",
    ).closed(ShutdownStatus.FINISHED, end_time=started + 9.5, why="phases-done")

    def prepare(rig: ShutdownRig) -> None:
        (Path(rig.config.host_paths.proc) / "sys" / "kernel" / "random" / "boot_id").unlink()
        write_json_atomic(rig.config.shutdown_state_file, old.to_json())
        assert rig.server is not None
        rig.server.patch(
            "nodes", NODE, {"spec": {"taints": [{"key": TAINT_KEY, "effect": "NoSchedule"}]}}
        )

    rig: ShutdownRig = await rig_factory(buckets=[(0, 10)], prepare=prepare)
    await until(lambda: not rig.has_taint(), 10, "our taint to be removed")
    await until(lambda: rig.state()["status"] == closed_as, 5, "the closed record")
    assert rig.state()["bootID"] == OLD_BOOT
    assert rig.pod_deletions() == []
    await rig.wait_for_lock()


# -- the real agent process, killed mid-shutdown ------------------------------------------


class AgentProcess:
    """``kubelet-companion agent`` as a subprocess, its output kept for failure reports."""

    def __init__(self, config: Path, kubeconfig: Path, bus: str, log: Path) -> None:
        self.log = log
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "DBUS_SYSTEM_BUS_ADDRESS": bus,
            "KUBERNETES_SERVICE_HOST": "",
        }
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self, signum: int = signal.SIGKILL) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)
            self.process.wait(20)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _resume_line(agent: AgentProcess) -> dict[str, float] | None:
    """The agent's "resuming" log line: remaining seconds, and when it was logged (Unix s)."""
    for line in agent.output().splitlines():
        if "resuming the shutdown inside its original deadlines" not in line:
            continue
        entry = json.loads(line)
        return {
            "remaining_seconds": float(entry["remaining_seconds"]),
            "at": parse_rfc3339(entry["timestamp"]),
        }
    return None


@pytest.fixture
def agents() -> Iterator[list[AgentProcess]]:
    started: list[AgentProcess] = []
    try:
        yield started
    finally:
        for agent in started:
            agent.kill()
        for agent in started:
            print(f"--- agent {agent.pid} output ---\n{agent.output()[-6000:]}")


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 30}], indirect=True)
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
async def test_agent_killed_mid_shutdown_resumes_inside_the_original_deadlines(
    logind_harness: LogindHarness,
    fake_apiserver: FakeApiServer,
    tmp_path: Path,
    agents: list[AgentProcess],
    signum: signal.Signals,
) -> None:
    """An agent killed or stopped mid-shutdown resumes inside the original deadlines."""
    # A real poweroff job never ends; logind then stays "preparing" and the restarted agent
    # can tell a shutdown in progress from one that was called off.
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    server = fake_apiserver
    kubelet = server.kubelet(NODE, time_scale=0.2)
    pods = [pod("stuck", grace_seconds=30), pod("later", priority=1000, grace_seconds=1)]
    ensure_priority_classes(server, pods)
    for each in pods:
        server.create(each)
    kubelet.stick("default", "stuck")
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "agent.yaml"
    config.write_text(
        config_text(
            state_dir=tmp_path / "state",
            proc=Path("/proc"),  # the same boot: the real boot ID, and real node facts
            dropin=logind_harness.dropin_dir / "99-zz-kubelet-companion.conf",
            # Phase 2's 30 s leave a loaded machine time to restart the agent inside the
            # budget (the point of the test); the stuck pod holds phase 1 to its 5 s deadline.
            buckets=[(0, 5), (1000, 30)],
            kubeconfig=kubeconfig,
            extra=f"metricsBindAddress: 127.0.0.1:{free_port()}\nlogFormat: json\n",
        )
    )
    state_file = tmp_path / "state" / "shutdown-state.json"

    def start_agent() -> AgentProcess:
        agent = AgentProcess(config, kubeconfig, logind_harness.bus_address, tmp_path / "log")
        agents.append(agent)
        return agent

    first = start_agent()
    await until(
        lambda: agent_lock_listed(logind_harness, first.pid),
        30,
        "the first lock",
        blocking=True,
        interval=0.05,
    )
    await asyncio.to_thread(logind_harness.power_off)
    await asyncio.to_thread(
        server.wait_for_request,
        lambda r: r.method == "DELETE" and r.path.endswith("/stuck"),
        10,
    )
    first.kill(signum)
    recorded = json.loads(state_file.read_text())
    assert recorded["status"] == "running"
    # The lock died with the process; logind went ahead with the poweroff job (which, like a
    # real one, does not finish). The node must still be tainted for the scheduler.
    await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=10)

    second = start_agent()
    later = await asyncio.to_thread(
        server.wait_for_request,
        lambda r: r.method == "DELETE" and r.path.endswith("/later"),
        20,
    )
    # Times are compared with the start the agent recorded (``time.monotonic`` is one clock
    # for every process here), never with the test's own sighting of the signal. Phase 1's
    # deadline is start + 5 s, and the stuck pod holds phase 1 until then.
    started = float(recorded["startMonotonic"])
    assert later.monotonic - started >= 5.0 - 0.5
    # The resumed run counts down the original budget: what it says is left, plus the time
    # it had already run when it said so, is the original 35 s (a run that restarted its
    # clock would claim about 35 s left however late it came back). Both figures are the
    # agent's own, so a slow machine moves them together.
    await until(
        lambda: _resume_line(second) is not None,
        20,
        "the resume log line",
        blocking=True,
        interval=0.05,
    )
    resumed = _resume_line(second)
    assert resumed is not None
    elapsed = resumed["at"] - parse_rfc3339(recorded["startTime"])
    assert resumed["remaining_seconds"] + elapsed == pytest.approx(35.0, abs=0.5)
    await until(
        lambda: json.loads(state_file.read_text())["status"] == "finished",
        15,
        "finished",
        blocking=True,
        interval=0.05,
    )
    final = json.loads(state_file.read_text())
    assert final["startTime"] == recorded["startTime"]  # the same shutdown, resumed
    assert [p["status"] for p in final["phases"]] == ["timed-out", "done"]
    node = server.get("nodes", NODE)
    assert any(t["key"] == TAINT_KEY for t in node["spec"]["taints"])
    assert kubelet.removed_at("default", "later") is not None


def agent_lock_listed(logind_harness: LogindHarness, pid: int) -> bool:
    return any(
        who == "kubelet-companion" and lock_pid == pid
        for _, who, _, _, _, lock_pid in logind_harness.list_inhibitors()
    )
