"""The live descheduler distrusts what it cannot check, from a real process on the fake API
server: NodeReports it does not believe are logged once and counted by reason; an object the
API server would not have stored is left out of its cache and counted; a profile that fails
fails the cycle loudly while the other profiles still run."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from agent.descheduler.policyfile import parse_policy_text
from agent.kube.api import KubeApi
from agent.kubesemantics.timestamps import rfc3339
from agent.telemetry.metrics import new_registry
from tests.harness.clock import HandClock
from tests.harness.deschedulerstate import node
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import node_report
from tests.harness.livedescheduler import run_live
from tests.harness.nodereport import register_crd
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import duplicates_cluster, owned_pod

CYCLES = "kubelet_companion_descheduler_cycles_total"
DUPLICATES = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: duplicates
    plugins:
      balance:
        enabled: ["RemoveDuplicates"]
"""


NAMES = ("honest", "foreign", "absurd")


def _report(name: str, uid: str, **status: Any) -> dict[str, Any]:
    return node_report(
        name,
        rfc3339(time.time()),
        node_uid=uid,
        **{"usage": {"cpu": 0.5, "memory": 2**30}, "shutdown": {"state": "none"}, **status},
    )


async def test_distrusted_reports_are_logged_once_and_counted_by_reason(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """Over three cycles a foreign-owned and an absurd report are each logged once, and the
    metrics count them by reason beside the one report believed."""
    register_crd(fake_apiserver)
    uids = {name: fake_apiserver.create(node(name))["metadata"]["uid"] for name in NAMES}
    fake_apiserver.create(_report("honest", uids["honest"]))
    fake_apiserver.create(_report("foreign", uids["honest"]))
    fake_apiserver.create(_report("absurd", uids["absurd"], usage={"cpu": 10**6, "memory": 1}))
    policy = tmp_path / "policy.yaml"
    policy.write_text(DUPLICATES)
    clock = HandClock(start=1000.0, epoch=time.time() - 1000.0)
    registry = new_registry("descheduler")
    stop = asyncio.Event()
    with capture_logs() as logs:
        run = asyncio.create_task(
            run_live(
                policy,
                kube_api,
                descheduling_interval=60,
                clock=clock,
                stop=stop,
                registry=registry,
            )
        )
        try:
            for cycles in (1, 2, 3):
                await wait_until(
                    lambda n=cycles: registry.get_sample_value(CYCLES, {"outcome": "planned"}) == n,
                    f"cycle {cycles}",
                )
                if cycles < 3:
                    clock.advance(60)
        finally:
            stop.set()
            assert await asyncio.wait_for(run, 10) == 0
    distrusted = [
        (entry["report"], entry["reason"])
        for entry in logs
        if entry["event"].startswith("NodeReport not believed")
    ]
    assert sorted(distrusted) == [("absurd", "implausible"), ("foreign", "not-owned")]
    by_reason = "kubelet_companion_descheduler_nodereports_distrusted"
    assert registry.get_sample_value(by_reason, {"reason": "not-owned"}) == 1
    assert registry.get_sample_value(by_reason, {"reason": "implausible"}) == 1
    assert registry.get_sample_value(by_reason, {"reason": "future-timestamp"}) == 0
    states = "kubelet_companion_descheduler_nodereports"
    assert registry.get_sample_value(states, {"state": "fresh"}) == 1
    assert registry.get_sample_value(states, {"state": "distrusted"}) == 2


async def test_an_object_the_api_server_would_not_store_is_skipped_and_counted(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A pod asking ``1e400`` cpu (beyond any int64) is left out of the pod cache and
    counted; the cycle runs on the rest and still evicts the duplicates it should."""
    duplicates_cluster(fake_apiserver, protected=False)
    odd = owned_pod("odd", "n3", "odd")
    odd["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e400"}}
    fake_apiserver.create(odd)
    policy = tmp_path / "policy.yaml"
    policy.write_text(DUPLICATES)
    registry = new_registry("descheduler")
    code = await run_live(policy, kube_api, registry=registry)
    assert code == 0
    skipped = "kubelet_companion_descheduler_objects_skipped_total"
    assert registry.get_sample_value(skipped, {"cache": "descheduler-pods"}) == 1
    evicted = sorted(
        r.path.split("/")[-2]
        for r in fake_apiserver.requests(method="POST")
        if r.path.endswith("/eviction")
    )
    assert evicted == ["db-1", "db-2", "web-1", "web-2"]


async def test_a_failing_profile_fails_the_cycle_loudly_and_the_others_still_run(
    fake_apiserver: FakeApiServer, kube_api: KubeApi
) -> None:
    """A profile whose DefaultEvictor names a PriorityClass the cluster lacks cannot be
    built: the cycle's outcome is ``failed``, a Warning Event says why, the other
    profile's evictions still go, and the one-shot run exits 1 (its plan failed in part)."""
    duplicates_cluster(fake_apiserver, protected=False)
    policy = parse_policy_text(
        DUPLICATES
        + """\
  - name: broken
    pluginConfig:
    - name: "DefaultEvictor"
      args:
        priorityThreshold: {name: "no-such-class"}
    plugins:
      balance:
        enabled: ["RemoveDuplicates"]
""",
        "<test>",
    )
    registry = new_registry("descheduler")
    code = await run_live(policy, kube_api, registry=registry)
    assert code == 1
    assert registry.get_sample_value(CYCLES, {"outcome": "failed"}) == 1
    warnings = [
        e
        for namespace in ("kube-system", "default")
        for e in fake_apiserver.list("events", namespace)
        if e["reason"] == "DeschedulingFailed"
    ]
    assert len(warnings) == 1
    assert warnings[0]["type"] == "Warning"
    assert "profile broken" in warnings[0]["message"]
    assert "no-such-class" in warnings[0]["message"]
    evicted = [r for r in fake_apiserver.requests(method="POST") if r.path.endswith("/eviction")]
    assert len(evicted) == 4  # the first profile's, as without the broken one
