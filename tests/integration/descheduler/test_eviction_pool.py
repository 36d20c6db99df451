"""The live evictor against the fake API server: bounded pool, plan order, 429/404, Events
that never slow an eviction, and evictions a budget holds until it allows them."""

import asyncio
from typing import Any

import pytest
from structlog.testing import capture_logs

from agent.descheduler.live.evictor import EvictionResult, LiveEvictor
from agent.descheduler.live.metrics import RESULT_BLOCKED_BY_PDB, RESULT_NOT_FOUND, RESULT_SUCCESS
from agent.descheduler.plan.shape import PlannedEviction
from agent.kube.client import AsyncKube
from agent.kube.events import EventBroadcaster, EventRecorder, ObjectRef
from agent.kube.ratelimit import TokenBucket
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
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


class _Run:
    """An evictor with its Event broadcaster's worker running (as the process runs it)."""

    def __init__(self, kube: AsyncKube, concurrency: int, *, failure_events: bool = False) -> None:
        self.events = EventBroadcaster(
            EventRecorder(kube, component="descheduler", host="test"),
            acquire=TokenBucket(0, 1).acquire,
        )
        self.evictor = LiveEvictor(
            kube,
            self.events,
            limiter=TokenBucket(0, 1),
            concurrency=concurrency,
            grace_period_seconds=5,
            failure_events=failure_events,
        )
        self._worker: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LiveEvictor:
        self._worker = asyncio.create_task(self.events.run())
        return self.evictor

    async def __aexit__(self, *exc: object) -> None:
        assert await self.events.drain(10)
        assert self._worker is not None
        self._worker.cancel()


async def _evict(
    kube: AsyncKube, concurrency: int, plan: list[PlannedEviction], **kwargs: Any
) -> list[EvictionResult]:
    """Run ``plan`` and wait for its Events to be posted."""
    async with _Run(kube, concurrency, **kwargs) as evictor:
        return await evictor.evict_all(plan)


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
    """With the first 3 evictions held by the server for a second, a pool of 3 starts
    nothing else until one of them finished, and what starts first is the plan's head;
    every pod is evicted and results come back in plan order."""
    fake_apiserver.faults.hang("POST", r"/eviction$", seconds=1.0, times=3)
    results = await _evict(async_kube, 3, [_planned(name) for name in pods])
    assert [r.eviction.name for r in results] == pods
    assert {r.result for r in results} == {RESULT_SUCCESS}
    arrivals = _eviction_arrivals(fake_apiserver)
    assert {name for _, name in arrivals[:3]} == set(pods[:3])
    assert arrivals[3][0] - arrivals[0][0] >= 1.0  # a slot freed only once one had answered


async def test_one_at_a_time_sends_in_exact_plan_order(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """A pool of one sends the evictions exactly in the plan's order, with its grace period."""
    plan = [_planned(name) for name in reversed(pods)]
    await _evict(async_kube, 1, plan)
    assert [name for _, name in _eviction_arrivals(fake_apiserver)] == list(reversed(pods))
    bodies = [r.body for r in fake_apiserver.requests(method="POST", path_contains="/eviction")]
    assert {body["deleteOptions"]["gracePeriodSeconds"] for body in bodies} == {5}


async def test_429_and_404_are_not_evicted_and_the_run_goes_on(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """A pod gone (404) and a pod its PDB protects (429) count as not evicted, get no
    Descheduled event, and the evictions after them still happen."""
    fake_apiserver.create(kubeobjects.pdb("one", match_labels={"app": "web"}, max_unavailable=0))
    fake_apiserver.create(owned_pod("free", "n1", "free"))
    plan = [_planned("gone"), _planned(pods[0]), _planned("free")]
    results = await _evict(async_kube, 2, plan)
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
    fake_apiserver.create(kubeobjects.pdb("one", match_labels={"app": "web"}, max_unavailable=0))
    plan = [_planned("gone"), _planned(pods[0])]
    await _evict(async_kube, 2, plan, failure_events=notify)
    events = fake_apiserver.list("events", "default")
    failed = [e for e in events if e["reason"] == "EvictionFailed"]
    assert [e["involvedObject"]["name"] for e in failed] == expected
    assert all(e["type"] == "Warning" for e in failed)


async def test_events_never_slow_evictions(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """With every Event held by the server for a second, all six evictions are answered
    while the first Event is still on its way; the Events all follow."""
    fake_apiserver.faults.hang("POST", r"/events$", seconds=1.0, times=6)
    run = _Run(async_kube, 2)
    async with run as evictor:
        results = await evictor.evict_all([_planned(name) for name in pods])
        assert {r.result for r in results} == {RESULT_SUCCESS}
        assert run.events.posted == 0  # the first Event has not been answered yet
    events = fake_apiserver.list("events", "default")
    assert sorted(e["involvedObject"]["name"] for e in events) == sorted(pods)


async def test_a_full_event_queue_drops_events_and_counts_them(async_kube: AsyncKube) -> None:
    """Past its capacity the broadcaster drops (and counts) the new Event instead of making
    the caller wait."""
    events = EventBroadcaster(
        EventRecorder(async_kube, component="descheduler", host="test"),
        acquire=TokenBucket(0, 1).acquire,
        capacity=2,
    )
    for index in range(5):
        events.post(ObjectRef(kind="Pod", name=f"p{index}"), "Normal", "Descheduled", "x")
    assert events.dropped == 3


async def test_a_failed_event_neither_fails_nor_repeats_its_eviction(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube, pods: list[str]
) -> None:
    """The Event is best effort: a 503 on the Event is logged, the pod counts as evicted,
    and its Eviction is sent once."""
    fake_apiserver.faults.add("POST", r"/events$", status=503, times=1)
    with capture_logs() as logs:
        results = await _evict(async_kube, 1, [_planned(pods[0])])
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
        await _evict(async_kube, 2, [_planned(pods[0]), _planned("gone")])
    lines = [e for e in logs if e.get("subsystem") == "descheduler.evictions"]
    assert sorted((e["event"], e["pod"]) for e in lines) == [
        ("Evicted pod", f"default/{pods[0]}"),
        ("pod not evicted", "default/gone"),
    ]
    evicted = next(e for e in lines if e["event"] == "Evicted pod")
    assert (evicted["plugin"], evicted["reason"]) == ("RemoveDuplicates", "duplicate")
