"""The descheduler's NodeReport cache against the fake API server: projections, when each report
was seen to change (on the descheduler's own clock), and a relist after 410."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.kube.api import KubeApi
from agent.kube.nodereports import NodeReportCache, Seen
from agent.kubesemantics.timestamps import rfc3339
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.nodereport import put_report, register_crd
from tests.harness.waiting import wait_until

T0 = 1_790_000_000.0
POD_UID = "0a0b0c0d-0000-4000-8000-000000000001"


def _report(server: FakeApiServer, name: str, observed: float, **status: Any) -> None:
    """Create (or update) a node's report with an observed time and a heartbeat of 60 s."""
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
    put_report(server, name, body)


def _entries(cache: NodeReportCache) -> dict[str, Seen]:
    return {seen.report.node: seen for seen in cache.entries()}


async def test_the_cache_keeps_projections_and_when_each_report_was_seen_to_change(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """Each report is kept as its projection (owners included, never the raw JSON), with
    the monotonic time this process saw it change and whether it witnessed the change; a
    write moves that time, and the writer's observedTime has no say in it."""
    register_crd(fake_apiserver)
    clock = [100.0]
    _report(fake_apiserver, "node-a", T0 - 10)
    cache = NodeReportCache(kube_api, monotonic=lambda: clock[0], read_timeout=5)
    task = asyncio.create_task(cache.reflector.run())
    try:
        async with asyncio.timeout(10):
            await cache.reflector.synced.wait()
        report, seen, witnessed = _entries(cache)["node-a"]
        # Found by the first list: seen then, but its change was not witnessed.
        assert (report.cpu_cores, report.memory_bytes, seen, witnessed) == (
            2.5,
            12 * 2**30,
            100.0,
            False,
        )
        assert [(o.kind, o.name, o.uid) for o in report.owners] == [
            ("Node", "node-a", "uid-node-a")
        ]
        assert report.pods[0].uid == POD_UID
        assert set(cache.reflector.store["node-a"]) == {"metadata", "projection"}

        clock[0] = 160.0
        # Dated in the past by its writer: still a change, seen now.
        _report(fake_apiserver, "node-a", T0 - 3600, readiness={"gateHeld": True})
        await wait_until(lambda: _entries(cache)["node-a"].report.gate_held, "the watch event")
        assert _entries(cache)["node-a"][1:] == (160.0, True)
    finally:
        cache.reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_a_relist_keeps_the_time_of_reports_that_did_not_change(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A watch from a compacted resourceVersion gets 410 and the cache relists: a report
    equal to the one it had keeps its old change time, one written meanwhile gets the new."""
    register_crd(fake_apiserver)
    clock = [100.0]
    _report(fake_apiserver, "node-a", T0)
    fake_apiserver.faults.add("GET", r"/nodereports$", status=503, times=1, watch=True)
    cache = NodeReportCache(kube_api, monotonic=lambda: clock[0], read_timeout=5)
    task = asyncio.create_task(cache.reflector.run())
    try:
        async with asyncio.timeout(10):
            await cache.reflector.synced.wait()
        await asyncio.to_thread(
            fake_apiserver.wait_for_request, lambda r: r.is_watch and r.status == 503, 10
        )
        clock[0] = 200.0
        _report(fake_apiserver, "node-b", T0, shutdown={"state": "completed"})
        fake_apiserver.compact()
        await wait_until(lambda: "node-b" in _entries(cache), "node-b after the relist")
        lists = [
            r
            for r in fake_apiserver.requests(method="GET", path_contains="/nodereports")
            if not r.is_watch
        ]
        assert [r.query.get("resourceVersion") for r in lists] == ["0", None]
        entries = _entries(cache)
        # node-a is as the first list found it; node-b's arrival the relist witnessed.
        assert (entries["node-a"][1:], entries["node-b"][1:]) == ((100.0, False), (200.0, True))
        assert entries["node-b"].report.shutdown == "completed"
    finally:
        cache.reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_a_deleted_report_is_forgotten(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """Deleting a report removes it from the cache and from the change times."""
    register_crd(fake_apiserver)
    _report(fake_apiserver, "node-a", T0)
    cache = NodeReportCache(kube_api, monotonic=lambda: 1.0, read_timeout=5)
    task = asyncio.create_task(cache.reflector.run())
    try:
        async with asyncio.timeout(10):
            await cache.reflector.synced.wait()
        fake_apiserver.delete("nodereports", "node-a")
        await wait_until(lambda: not cache.entries(), "the deletion by watch")
        assert cache.all_reports() == []
    finally:
        cache.reflector.stop()
        await asyncio.wait_for(task, 10)
