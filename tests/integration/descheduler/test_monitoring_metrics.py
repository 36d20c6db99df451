"""What the alerts on the descheduler read, from a real process on the fake API server:
which replica leads, and how fresh the agents' NodeReports are."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry

from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.telemetry.metrics import new_registry
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import FAST_LEASE, run_live
from tests.harness.waiting import wait_until
from tests.integration.descheduler.test_nodereports import (
    REAL_USAGE_POLICY,
    _cluster,
)

LEADER = "kubelet_companion_descheduler_leader"


async def test_a_stale_nodereport_is_counted_and_a_run_without_election_leads(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """With one of three reports ten minutes old, the watched reports show 1 stale and
    2 fresh, the oldest 600 s old; a run without leader election exports itself as leader."""
    _cluster(fake_apiserver, hot_report_age=600.0)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(REAL_USAGE_POLICY)
    registry = new_registry("descheduler")
    code = await run_live(policy_file, kube_api, registry=registry)
    assert code == 0
    reports = "kubelet_companion_descheduler_nodereports"
    assert registry.get_sample_value(reports, {"state": "stale"}) == 1
    assert registry.get_sample_value(reports, {"state": "fresh"}) == 2
    oldest = registry.get_sample_value("kubelet_companion_descheduler_nodereport_max_age_seconds")
    assert oldest is not None
    assert oldest >= 600
    assert registry.get_sample_value(LEADER) == 1


async def test_of_two_electing_replicas_exactly_one_exports_itself_as_leader(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """Two replicas campaigning for one Lease: the sum of their leader gauges becomes 1,
    and the replica exporting 1 is the Lease's holder."""
    fake_apiserver.kubelet("n1")
    policy = load_policy(policy_file)
    registries: dict[str, CollectorRegistry] = {}
    tasks: list[asyncio.Task[int]] = []
    for identity in ("replica-a", "replica-b"):
        registries[identity] = new_registry("descheduler")
        tasks.append(
            asyncio.create_task(
                run_live(
                    policy,
                    kube_api,
                    identity=identity,
                    registry=registries[identity],
                    descheduling_interval=0.3,
                    leader_elect=True,
                    **FAST_LEASE,
                )
            )
        )

    def leaders() -> list[str]:
        return [name for name, reg in registries.items() if reg.get_sample_value(LEADER) == 1]

    try:
        (leader,) = await wait_until(leaders, "one replica leading", 20)
        lease = fake_apiserver.try_get("leases", "descheduler", "kube-system") or {}
        assert lease["spec"]["holderIdentity"] == leader
        (follower,) = set(registries) - {leader}
        assert registries[follower].get_sample_value(LEADER) == 0
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
