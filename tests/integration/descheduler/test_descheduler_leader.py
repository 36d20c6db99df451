"""Two descheduler replicas on one fake API server: only the Lease holder evicts, and the
other takes over when the holder dies."""

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

from agent.descheduler.live.app import run_descheduler
from agent.descheduler.live.options import RunOptions
from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.kube.evictionmemory import RECENT_EVICTIONS_ANNOTATION
from agent.kube.leaderelection import ElectionTiming
from agent.kube.timestamps import rfc3339
from tests.harness.clock import HandClock
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.nodereport import register_crd
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import owned_pod

TIMING = ElectionTiming(lease_duration=2.0, renew_deadline=1.5, retry_period=0.3)


def _descheduled(server: FakeApiServer) -> list[dict[str, Any]]:
    return [e for e in server.list("events", "default") if e["reason"] == "Descheduled"]


def _holder(server: FakeApiServer) -> str:
    lease = server.try_get("leases", "descheduler", "kube-system")
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _duplicates(server: FakeApiServer, owner: str, node: str) -> None:
    kubelet = server.kubelet(node)
    for index in range(3):
        server.create(owned_pod(f"{owner}-{index}", node, owner))
        kubelet.set_ready("default", f"{owner}-{index}")


async def test_only_the_leader_evicts_and_a_follower_takes_over(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """Of two replicas, every Descheduled event comes from the Lease holder; once the holder
    is killed (its lease lapses), the other replica becomes leader and evicts new work; the
    churn guard's memory of the first evictions is on the Lease for it."""
    fake_apiserver.kubelet("n2")
    _duplicates(fake_apiserver, "web", "n1")
    policy = load_policy(policy_file)
    options = RunOptions(
        interval=0.3,
        leader_elect=True,
        election=TIMING,
        metrics_bind_address="127.0.0.1:0",
        qps=0,
    )

    def replica(identity: str) -> asyncio.Task[int]:
        with_identity = dataclasses.replace(options, identity=identity)
        return asyncio.create_task(
            run_descheduler(policy, with_identity, kube_api, install_signal_handlers=False)
        )

    replicas = {"replica-a": replica("replica-a"), "replica-b": replica("replica-b")}
    try:
        await wait_until(lambda: len(_descheduled(fake_apiserver)) == 2, "first evictions", 20)
        leader = _holder(fake_apiserver)
        assert leader in replicas
        assert {e["reportingInstance"] for e in _descheduled(fake_apiserver)} == {leader}
        # The churn guard's memory is on the Lease: the owner that lost pods is remembered.
        await wait_until(
            lambda: "uid-web" in _recent_evictions(fake_apiserver), "memory on the Lease", 10
        )
        # Kill the leader: cancelled, it does not release the Lease, which must lapse.
        replicas[leader].cancel()
        await asyncio.gather(replicas[leader], return_exceptions=True)
        _duplicates(fake_apiserver, "api", "n3")
        await wait_until(
            lambda: bool(_api_events(fake_apiserver)), "evictions by the new leader", 20
        )
        (follower,) = set(replicas) - {leader}
        assert _holder(fake_apiserver) == follower
        assert {e["reportingInstance"] for e in _api_events(fake_apiserver)} == {follower}
    finally:
        for task in replicas.values():
            task.cancel()
        await asyncio.gather(*replicas.values(), return_exceptions=True)


def _recent_evictions(server: FakeApiServer) -> str:
    lease = server.try_get("leases", "descheduler", "kube-system") or {}
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(RECENT_EVICTIONS_ANNOTATION) or "")


def _api_events(server: FakeApiServer) -> list[dict[str, Any]]:
    return [e for e in _descheduled(server) if e["involvedObject"]["name"].startswith("api-")]


async def test_a_replica_that_becomes_leader_cycles_at_once(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """A follower with a 10-minute interval takes over the Lease of a leader that stopped
    renewing (lease 15 s, retry 2 s) and evicts at once: its clock is moved past the lease in
    retry steps, never near its interval."""
    register_crd(fake_apiserver)
    fake_apiserver.kubelet("n2")
    fake_apiserver.kubelet("n3")
    _duplicates(fake_apiserver, "web", "n1")
    clock = HandClock(start=1000.0, epoch=time.time() - 1000.0)
    fake_apiserver.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "descheduler", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "gone-leader",
                "leaseDurationSeconds": 15,
                "acquireTime": rfc3339(clock.now(), micros=True),
                "renewTime": rfc3339(clock.now(), micros=True),
                "leaseTransitions": 0,
            },
        }
    )
    options = RunOptions(
        interval=600,
        leader_elect=True,
        election=ElectionTiming(lease_duration=15, renew_deadline=10, retry_period=2, jitter=0),
        identity="replica-b",
        metrics_bind_address="127.0.0.1:0",
        qps=0,
    )
    stop = asyncio.Event()
    run = asyncio.create_task(
        run_descheduler(
            load_policy(policy_file),
            options,
            kube_api,
            clock=clock,
            stop=stop,
            install_signal_handlers=False,
        )
    )
    try:
        # The follower has read the Lease once: from then on it counts the lease's age.
        await asyncio.to_thread(
            fake_apiserver.wait_for_request,
            lambda r: r.method == "GET" and r.path.endswith("/leases/descheduler"),
            10,
        )
        for _ in range(30):
            if len(_descheduled(fake_apiserver)) == 2:
                break
            clock.advance(2)
            await asyncio.sleep(0.05)
        assert len(_descheduled(fake_apiserver)) == 2
        assert _holder(fake_apiserver) == "replica-b"
        assert clock.monotonic() - 1000.0 <= 30  # seconds of lease, not the 600 s interval
    finally:
        stop.set()
        assert await asyncio.wait_for(run, 10) == 0
