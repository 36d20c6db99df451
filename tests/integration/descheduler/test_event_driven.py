"""Event-driven cycles wired to the live caches: a node becoming Ready, or a critical add-on
turning Unschedulable, starts a cycle before the interval."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry

from agent.kube.api import KubeApi
from agent.telemetry.metrics import new_registry
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.harness.waiting import wait_until
from tests.integration.descheduler.test_rescue import (
    RESCUE_POLICY,
    _addon,
    _full_cluster,
    _taints,
)


def _cycles(registry: CollectorRegistry) -> float:
    return sum(
        registry.get_sample_value("kubelet_companion_descheduler_cycles_total", {"outcome": o})
        or 0.0
        for o in ("planned", "skipped")
    )


def _event_driven(
    policy_file: Path, kube_api: KubeApi, registry: CollectorRegistry, stop: asyncio.Event
) -> asyncio.Task[int]:
    """The live descheduler with an hour's interval and event-driven cycles: after its first
    cycle, only an event can start the next one within a test's time."""
    return asyncio.create_task(
        run_live(
            policy_file,
            kube_api,
            stop=stop,
            registry=registry,
            descheduling_interval=3600,
            event_driven_cycles=True,
            min_cycle_spacing=0.2,
        )
    )


async def test_node_becoming_ready_starts_a_cycle_before_the_interval(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """With an hour's interval, a node turning Ready starts the second cycle at once."""
    for name in ("a", "b"):
        fake_apiserver.create(kubeobjects.node(name, ready=True))
    late = kubeobjects.node("late", ready=True)
    late["status"]["conditions"][0]["status"] = "False"
    fake_apiserver.create(late)
    registry = new_registry("descheduler")
    stop = asyncio.Event()
    run = _event_driven(policy_file, kube_api, registry, stop)
    try:
        await wait_until(lambda: _cycles(registry) >= 1, timeout=20)
        fake_apiserver.patch(
            "nodes",
            "late",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            subresource="status",
            patch_type="merge",
        )
        await wait_until(lambda: _cycles(registry) >= 2, timeout=20)
    finally:
        stop.set()
        assert await asyncio.wait_for(run, timeout=20) == 0


async def test_addon_going_unschedulable_starts_a_rescue_before_the_interval(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """With an hour's interval, a critical add-on turning Unschedulable is rescued at once."""
    _full_cluster(fake_apiserver, addon=False)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        RESCUE_POLICY.replace("unschedulableSeconds: 60", "unschedulableSeconds: 0")
    )
    registry = new_registry("descheduler")
    stop = asyncio.Event()
    run = _event_driven(policy_file, kube_api, registry, stop)
    try:
        await wait_until(lambda: _cycles(registry) >= 1, timeout=20)
        fake_apiserver.create(_addon())
        await wait_until(
            lambda: fake_apiserver.requests(method="POST", path_contains="/eviction"), timeout=20
        )
        assert any(t["key"] == "CriticalAddonsOnly" for t in _taints(fake_apiserver, "b"))
    finally:
        stop.set()
        assert await asyncio.wait_for(run, timeout=20) == 0
