"""The descheduler's NodeReport cache against the fake API server: projections, staleness, 410."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.kube.api import KubeApi
from agent.kube.nodereports import NodeReportCache, NodeUsageReport
from agent.kube.timestamps import rfc3339
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.nodereport import register_crd
from tests.harness.waiting import wait_until

T0 = 1_790_000_000.0
POD_UID = "0a0b0c0d-0000-4000-8000-000000000001"


def _report(server: FakeApiServer, name: str, observed: float, **status: Any) -> None:
    """Create (or update) a node's report with an observed time and a heartbeat of 60 s."""
    if server.try_get("nodereports", name) is None:
        server.create(
            {
                "apiVersion": "kubelet-companion.io/v1alpha1",
                "kind": "NodeReport",
                "metadata": {"name": name},
            }
        )
    body = {
        "observedTime": rfc3339(observed),
        "heartbeatSeconds": 60,
        "capacity": {"cpu": 8, "memory": 32 * 2**30, "swap": 0},
        "allocatable": {"cpu": 7.5, "memory": 30 * 2**30},
        "usage": {"cpu": 2.5, "memory": 12 * 2**30, "swap": 0, "cpuPercent": 31},
        "pods": [
            {"namespace": "web", "name": "web-0", "uid": POD_UID, "cpu": 0.4, "memory": 2**28}
        ],
        "readiness": {"gateHeld": False, "waitingFor": []},
        "shutdown": {"state": "none"},
        "agentStopped": False,
        **status,
    }
    server.patch("nodereports", name, {"status": body}, patch_type="merge", subresource="status")


async def test_reader_answers_from_projections_and_marks_stale_after_3_heartbeats(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """Node and pod usage, shutdown, gate and stop come from the cache; a report older than
    3 heartbeats (180 s here) counts as missing."""
    register_crd(fake_apiserver)
    now = [T0]
    _report(fake_apiserver, "node-a", T0 - 10)
    _report(fake_apiserver, "node-b", T0 - 5, shutdown={"state": "inProgress"})
    cache = NodeReportCache(kube_api, now=lambda: now[0], read_timeout=5)
    task = asyncio.create_task(cache.reflector.run())
    try:
        async with asyncio.timeout(10):
            await cache.reflector.synced.wait()
        report = cache.node("node-a")
        assert isinstance(report, NodeUsageReport)
        assert (report.cpu_cores, report.memory_bytes) == (2.5, 12 * 2**30)
        assert (report.cpu_capacity, report.cpu_allocatable) == (8, 7.5)
        pod = cache.pod(POD_UID)
        assert pod is not None
        assert (pod.cpu_cores, pod.memory_bytes) == (0.4, 2**28)
        assert cache.shutting_down("node-b")
        assert not cache.shutting_down("node-a")
        assert not cache.gated("node-a")
        assert cache.stale("node-c")  # no report at all

        _report(fake_apiserver, "node-a", T0, readiness={"gateHeld": True}, agentStopped=True)
        await wait_until(lambda: cache.gated("node-a"), "the update by watch")
        assert cache.stopped("node-a")
        # The raw JSON is not kept: the store holds the name and the projection only.
        assert set(cache.reflector.store["node-a"]) == {"metadata", "projection"}

        now[0] = T0 + 180  # exactly 3 heartbeats after node-a's report: still fresh
        assert not cache.stale("node-a")
        now[0] = T0 + 181
        assert cache.stale("node-a")
        assert cache.node("node-a") is None
        assert cache.pod(POD_UID) is None  # a stale report answers for none of its pods
        assert cache.reports() == []
    finally:
        cache.reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_reader_survives_a_watch_410_with_a_relist(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A watch from a compacted resourceVersion gets 410; the cache relists and has the
    report written meanwhile."""
    register_crd(fake_apiserver)
    _report(fake_apiserver, "node-a", T0)
    fake_apiserver.faults.add("GET", r"/nodereports$", status=503, times=1, watch=True)
    cache = NodeReportCache(kube_api, now=lambda: T0, read_timeout=5)
    task = asyncio.create_task(cache.reflector.run())
    try:
        async with asyncio.timeout(10):
            await cache.reflector.synced.wait()
        await asyncio.to_thread(
            fake_apiserver.wait_for_request, lambda r: r.is_watch and r.status == 503, 10
        )
        _report(fake_apiserver, "node-b", T0, shutdown={"state": "completed"})
        fake_apiserver.compact()
        await wait_until(lambda: cache.shutting_down("node-b"), "node-b after the relist")
        lists = [
            r
            for r in fake_apiserver.requests(method="GET", path_contains="/nodereports")
            if not r.is_watch
        ]
        assert [r.query.get("resourceVersion") for r in lists] == ["0", None]
        assert cache.node("node-a") is not None
    finally:
        cache.reflector.stop()
        await asyncio.wait_for(task, 10)
