"""Two ``kubelet-companion descheduler`` processes on one fake API server, as a 2-replica
Deployment runs them: only the Lease holder evicts, and when it is killed (SIGKILL, no
release) the other takes the lapsed Lease and evicts the new work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import owned_pod

FLAGS = (
    "--descheduling-interval=500ms",
    "--leader-elect",
    "--leader-elect-lease-duration=3s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=300ms",
    "--client-connection-qps=100",
    "--metrics-bind-address=127.0.0.1:0",
)
"""Upstream's flags, with leader-election timings short enough for a test."""


class Replica:
    """One descheduler process; its JSON logs (stderr) kept in a file."""

    def __init__(self, policy: Path, kubeconfig: Path, log: Path) -> None:
        self.log = log
        env = {**os.environ, "KUBERNETES_SERVICE_HOST": ""}
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent.cli",
                    "descheduler",
                    "--policy-config-file",
                    str(policy),
                    "--kubeconfig",
                    str(kubeconfig),
                    *FLAGS,
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=out,
            )

    def identity(self) -> str | None:
        """The identity this process leads under, once it has led."""
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("event") in ("became leader", "took over an expired lease"):
                    return str(entry["identity"])
        return None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture(name="replicas")
def _replicas(tmp_path: Path) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    yield started
    for replica in started:
        replica.kill()
    for replica in started:
        print(f"--- {replica.log.name} ---\n{replica.log.read_text(errors='replace')[-4000:]}")


def _descheduled_by(server: FakeApiServer) -> dict[str, str]:
    """Pod name -> the reporting instance of its ``Descheduled`` event."""
    return {
        event["involvedObject"]["name"]: event["reportingInstance"]
        for event in server.list("events", "default")
        if event["reason"] == "Descheduled"
    }


def _holder(server: FakeApiServer) -> str:
    lease: dict[str, Any] = server.try_get("leases", "descheduler", "kube-system") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def _duplicates(server: FakeApiServer, owner: str, node: str) -> None:
    kubelet = server.kubelet(node)
    for index in range(3):
        server.create(owned_pod(f"{owner}-{index}", node, owner))
        kubelet.set_ready("default", f"{owner}-{index}")


async def test_only_the_leader_process_evicts_and_the_other_takes_over_when_it_dies(
    fake_apiserver: FakeApiServer, policy_file: Path, tmp_path: Path, replicas: list[Replica]
) -> None:
    """Every Descheduled event comes from the Lease holder; after SIGKILL of the holder the
    other process takes the Lease once it lapses and evicts the duplicates created since."""
    server = fake_apiserver
    server.kubelet("n3")
    _duplicates(server, "web", "n1")
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    replicas.extend(
        Replica(policy_file, kubeconfig, tmp_path / f"replica-{name}.log") for name in "ab"
    )

    first = await wait_until(lambda: _holder(server), "a leader", timeout=60)
    await wait_until(lambda: len(_descheduled_by(server)) == 2, "web's surplus evicted", 30)
    assert set(_descheduled_by(server).values()) == {first}
    leader = await wait_until(
        lambda: next((r for r in replicas if r.identity() == first), None), "the leader's log"
    )
    follower = next(r for r in replicas if r is not leader)

    leader.kill()
    _duplicates(server, "api", "n2")
    second = await wait_until(
        lambda: (holder := _holder(server)) != first and holder, "the takeover", timeout=60
    )
    assert second == await wait_until(follower.identity, "the follower's log")
    await wait_until(
        lambda: sum(name.startswith("api-") for name in _descheduled_by(server)) == 2,
        "api's surplus evicted by the new leader",
        timeout=30,
    )
    by = _descheduled_by(server)
    assert {by[name] for name in by if name.startswith("api-")} == {second}
    assert {by[name] for name in by if name.startswith("web-")} == {first}
