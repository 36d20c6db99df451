"""Two descheduler replicas on one fake API server: only the Lease holder evicts, and the
other takes over when the holder dies."""

import asyncio
import time
from pathlib import Path
from typing import Any

from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.kube.evictionmemory import RECENT_EVICTIONS_ANNOTATION
from agent.kubesemantics.timestamps import rfc3339
from tests.harness.clock import HandClock
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import FAST_LEASE, run_live
from tests.harness.nodereport import register_crd
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import owned_pod


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

    def replica(identity: str) -> asyncio.Task[int]:
        return asyncio.create_task(
            run_live(
                policy,
                kube_api,
                identity=identity,
                descheduling_interval=0.3,
                leader_elect=True,
                **FAST_LEASE,
            )
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
    renewing (lease 15 s, retry 2 s) once the lease has run out, and evicts at once: its clock
    is moved in retry steps until it holds the Lease, then not at all while its first cycle
    evicts (a wait for its interval would never end)."""
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
    stop = asyncio.Event()
    run = asyncio.create_task(
        run_live(
            policy_file,
            kube_api,
            clock=clock,
            stop=stop,
            identity="replica-b",
            election_jitter=0,
            descheduling_interval=600,
            leader_elect=True,
            lease_duration=15,
            renew_deadline=10,
            retry_period=2,
        )
    )
    try:
        # The follower has read the Lease once: from then on it counts the lease's age.
        await asyncio.to_thread(
            fake_apiserver.wait_for_request,
            lambda r: r.method == "GET" and r.path.endswith("/leases/descheduler"),
            10,
        )
        await wait_until(
            lambda: _holder(fake_apiserver) == "replica-b",
            "the follower's takeover",
            interval=0.05,
            each=lambda: clock.advance(2),
        )
        taken_at = clock.monotonic()
        assert taken_at - 1000.0 >= 15  # not before the gone leader's lease ran out
        await wait_until(
            lambda: len(_descheduled(fake_apiserver)) == 2, "the new leader's evictions"
        )
        assert clock.monotonic() == taken_at
    finally:
        stop.set()
        assert await asyncio.wait_for(run, 10) == 0
