"""The live evictor against the fake API server: bounded pool, plan order, 429/404."""

import asyncio
from typing import Any

import pytest
from structlog.testing import capture_logs

from agent.descheduler.evictions.live import LiveEvictor
from agent.descheduler.metrics import RESULT_BLOCKED_BY_PDB, RESULT_NOT_FOUND, RESULT_SUCCESS
from agent.descheduler.plan import PlannedEviction
from agent.kube.client import AsyncKube
from agent.kube.events import EventRecorder
from agent.kube.ratelimit import TokenBucket
from tests.harness.fake_apiserver import FakeApiServer, manifests
from tests.integration.descheduler.conftest import owned_pod


def _planned(name: str, node: str = "n1") -> PlannedEviction:
    return PlannedEviction(
        namespace="default",
        name=name,
        uid=f"uid-{name}",
        node=node,
        plugin="RemoveDuplicates",
        profile="p",
        reason="duplicate",
    )


def _evictor(kube: AsyncKube, concurrency: int, *, failure_events: bool = False) -> LiveEvictor:
    return LiveEvictor(
        kube,
        EventRecorder(kube, component="descheduler", host="test"),
        limiter=TokenBucket(0, 1),
        concurrency=concurrency,
        grace_period_seconds=5,
        failure_events=failure_events,
    )


def _eviction_arrivals(server: FakeApiServer) -> list[tuple[float, str]]:
    return sorted(
        (request.monotonic, request.path.split("/")[-2])
        for request in server.requests(method="POST", path_contains="/eviction")
    )


@pytest.fixture(name="pods")
def _pods(fake_apiserver: FakeApiServer) -> list[str]:
    kubelet = fake_apiserver.kubelet("n1")
    names = [f"web-{index}" for index in range(6)]
    for name in names:
        fake_apiserver.create(owned_pod(name, "n1", "web"))
        kubelet.set_ready("default", name)
    return names


async def test_pool_admits_in_plan_order_and_never_exceeds_its_bound(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """With the first 3 evictions held by the server, a pool of 3 starts nothing else until
    one of them finished (its Event is posted first), and what starts first is the plan's
    head; every pod is evicted and results come back in plan order."""
    fake_apiserver.faults.hang("POST", r"/eviction$", seconds=1.0, times=3)
    results = await _evictor(async_kube, 3).evict_all([_planned(name) for name in pods])
    assert [r.eviction.name for r in results] == pods
    assert {r.result for r in results} == {RESULT_SUCCESS}
    arrivals = _eviction_arrivals(fake_apiserver)
    assert {name for _, name in arrivals[:3]} == set(pods[:3])
    first_event = min(
        request.monotonic
        for request in fake_apiserver.requests(method="POST", path_contains="/events")
    )
    assert arrivals[3][0] > first_event


async def test_one_at_a_time_sends_in_exact_plan_order(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """A pool of one sends the evictions exactly in the plan's order, with its grace period."""
    plan = [_planned(name) for name in reversed(pods)]
    await _evictor(async_kube, 1).evict_all(plan)
    assert [name for _, name in _eviction_arrivals(fake_apiserver)] == list(reversed(pods))
    bodies = [r.body for r in fake_apiserver.requests(method="POST", path_contains="/eviction")]
    assert {body["deleteOptions"]["gracePeriodSeconds"] for body in bodies} == {5}


async def test_429_and_404_are_not_evicted_and_the_run_goes_on(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """A pod gone (404) and a pod its PDB protects (429) count as not evicted, get no
    Descheduled event, and the evictions after them still happen."""
    fake_apiserver.create(manifests.pdb("one", match_labels={"app": "web"}, max_unavailable=0))
    fake_apiserver.create(owned_pod("free", "n1", "free"))
    plan = [_planned("gone"), _planned(pods[0]), _planned("free")]
    results = await _evictor(async_kube, 2).evict_all(plan)
    assert [r.result for r in results] == [RESULT_NOT_FOUND, RESULT_BLOCKED_BY_PDB, RESULT_SUCCESS]
    events = fake_apiserver.list("events", "default")
    assert [e["involvedObject"]["name"] for e in events if e["reason"] == "Descheduled"] == ["free"]


@pytest.mark.parametrize(
    ("notify", "expected"),
    [
        pytest.param(True, ["web-0"], id="evictionFailureEventNotification-on"),
        pytest.param(False, [], id="off-by-default"),
    ],
)
async def test_refused_evictions_get_a_warning_event_when_the_policy_asks(
    fake_apiserver: FakeApiServer,
    async_kube: AsyncKube,
    pods: list[str],
    notify: bool,
    expected: list[str],
) -> None:
    """With ``evictionFailureEventNotification`` a pod whose eviction was refused (its PDB's
    429) gets a Warning ``EvictionFailed`` Event; a pod already gone (404) gets none."""
    fake_apiserver.create(manifests.pdb("one", match_labels={"app": "web"}, max_unavailable=0))
    plan = [_planned("gone"), _planned(pods[0])]
    await _evictor(async_kube, 2, failure_events=notify).evict_all(plan)
    events = fake_apiserver.list("events", "default")
    failed = [e for e in events if e["reason"] == "EvictionFailed"]
    assert [e["involvedObject"]["name"] for e in failed] == expected
    assert all(e["type"] == "Warning" for e in failed)


async def test_each_eviction_and_its_event_take_one_trip_to_the_worker_pool(
    fake_apiserver: FakeApiServer,
    async_kube: AsyncKube,
    pods: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An accepted Eviction and its ``Descheduled`` Event are sent in one worker call, so a
    plan of n evictions hands n calls to the thread pool, and every Event is posted by the
    time the run returns."""
    loop = asyncio.get_running_loop()
    handed: list[object] = []
    run_in_executor = loop.run_in_executor

    def counted(executor: Any, fn: Any, *args: Any) -> Any:
        handed.append(fn)
        return run_in_executor(executor, fn, *args)

    monkeypatch.setattr(loop, "run_in_executor", counted)
    results = await _evictor(async_kube, 2).evict_all([_planned(name) for name in pods])
    monkeypatch.undo()
    assert {r.result for r in results} == {RESULT_SUCCESS}
    assert len(handed) == len(pods)
    events = fake_apiserver.list("events", "default")
    assert sorted(e["involvedObject"]["name"] for e in events) == sorted(pods)


async def test_a_failed_event_neither_fails_nor_repeats_its_eviction(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """The Event is best effort even though it shares its Eviction's worker call: a 503 on
    the Event is logged, the pod counts as evicted, and its Eviction is sent once."""
    fake_apiserver.faults.add("POST", r"/events$", status=503, times=1)
    with capture_logs() as logs:
        results = await _evictor(async_kube, 1).evict_all([_planned(pods[0])])
    assert [r.result for r in results] == [RESULT_SUCCESS]
    assert [name for _, name in _eviction_arrivals(fake_apiserver)] == [pods[0]]
    assert fake_apiserver.list("events", "default") == []
    assert [e["event"] for e in logs if e["event"] == "event not posted"] == ["event not posted"]


async def test_each_eviction_logs_one_line_with_its_outcome(
    async_kube: AsyncKube, pods: list[str]
) -> None:
    """Every eviction of a run logs one line, under the evictor's subsystem: ``Evicted pod``
    with its plugin and reason, or ``pod not evicted`` with why."""
    with capture_logs() as logs:
        await _evictor(async_kube, 2).evict_all([_planned(pods[0]), _planned("gone")])
    lines = [e for e in logs if e.get("subsystem") == "descheduler.evictions"]
    assert sorted((e["event"], e["pod"]) for e in lines) == [
        ("Evicted pod", f"default/{pods[0]}"),
        ("pod not evicted", "default/gone"),
    ]
    evicted = next(e for e in lines if e["event"] == "Evicted pod")
    assert (evicted["plugin"], evicted["reason"]) == ("RemoveDuplicates", "duplicate")
