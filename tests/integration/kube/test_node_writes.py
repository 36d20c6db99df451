"""Guarded node patches and events over HTTP: nothing of others is lost, repeats aggregate."""

import asyncio

import pytest
from structlog.testing import capture_logs

from agent.kube.backoff import Backoff
from agent.kube.client import AsyncKube
from agent.kube.errors import Invalid, Unavailable
from agent.kube.events import EventRecorder, ObjectRef
from agent.kube.patches import (
    GUARD_PATH,
    NodePatcher,
    OwnershipError,
    Taint,
    metadata_map_ops,
    taint_ops,
)
from agent.runtime.ownership import owned_keys
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.fake_apiserver.faults import FaultRule
from tests.harness.waiting import wait_until

OURS = "kubelet-companion.io/test"


owns = owned_keys()
"""The agent's own predicate: keys under ``kubelet-companion.io/``."""


async def test_a_concurrent_taint_survives_our_guarded_write(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """Someone adds a taint after we read: the test op fails, we re-read, and both stay."""
    fake_apiserver.create(kubeobjects.node("n1"))
    cached = fake_apiserver.get("nodes", "n1")
    foreign = fake_apiserver.patch(
        "nodes", "n1", {"spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}}
    )
    patcher = NodePatcher(async_kube, "n1", owns)
    await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t", node=cached)
    keys = [t["key"] for t in fake_apiserver.get("nodes", "n1")["spec"]["taints"]]
    assert keys == ["dedicated", OURS]
    patches = fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")
    assert [r.status for r in patches] == [422, 200]
    assert patches[-1].body[0] == {
        "op": "test",
        "path": "/metadata/resourceVersion",
        "value": foreign["metadata"]["resourceVersion"],
    }


async def test_conflicts_and_server_errors_are_retried(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """A 409 and a 503 in a row only delay the write."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.add("PATCH", r"/nodes/n1$", status=409, times=1)
    fake_apiserver.faults.add("PATCH", r"/nodes/n1$", status=503, times=1)
    patcher = NodePatcher(async_kube, "n1", owns)
    await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t")
    assert [t["key"] for t in fake_apiserver.get("nodes", "n1")["spec"]["taints"]] == [OURS]


async def test_an_invalid_patch_fails_at_once(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """A 422 that is not the resourceVersion test (an op that does not apply) is not retried:
    the answer names no cause (as kube-apiserver v1.28's does not), so the Node is read once
    more, and as its resourceVersion is still the one our guard tested, the patch itself is
    invalid."""
    fake_apiserver.create(kubeobjects.node("n1"))
    missing = [{"op": "remove", "path": "/metadata/labels/kubelet-companion.io~1absent"}]
    patcher = NodePatcher(async_kube, "n1", owns)
    with capture_logs() as logs, pytest.raises(Invalid) as caught:
        await patcher.update(lambda _node: missing, what="t")
    assert not caught.value.failed_test(GUARD_PATH)
    (logged,) = [entry for entry in logs if entry["log_level"] == "error"]
    assert logged["event"] == "node patch rejected as invalid"
    patches = fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")
    assert [r.status for r in patches] == [422]


async def test_only_the_guard_failure_is_retried(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """A failed test op is retried from a fresh read until the write lands, though the 422
    names no cause (kube-apiserver v1.28): the Node's resourceVersion has moved on."""
    fake_apiserver.create(kubeobjects.node("n1"))
    stale = fake_apiserver.get("nodes", "n1")
    for value in ("a", "b"):  # two writes by others after our cached read
        fake_apiserver.patch("nodes", "n1", {"metadata": {"labels": {"other": value}}})
    patcher = NodePatcher(async_kube, "n1", owns)
    label = {"kubelet-companion.io/x": "1"}
    await patcher.update(
        lambda node: metadata_map_ops(node, "labels", set_values=label), what="t", node=stale
    )
    labels = fake_apiserver.get("nodes", "n1")["metadata"]["labels"]
    assert labels == {"other": "b", "kubelet-companion.io/x": "1"}
    patches = fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")
    assert [r.status for r in patches] == [422, 200]


async def test_a_race_lost_after_a_wait_is_patched_from_a_read_made_after_it(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """Others write the Node while we wait between tries: the next patch is built on a read
    made after the wait (not the one before it), so the write lands at the second try
    from that read, and the lost races back off from the bottom of the ladder."""
    fake_apiserver.create(kubeobjects.node("n1"))
    stale = fake_apiserver.get("nodes", "n1")
    fake_apiserver.patch("nodes", "n1", {"metadata": {"labels": {"other": "first"}}})
    waits: list[float] = []

    async def others_write_while_we_wait(seconds: float) -> None:
        waits.append(seconds)
        fake_apiserver.patch("nodes", "n1", {"metadata": {"labels": {"other": str(seconds)}}})

    patcher = NodePatcher(
        async_kube,
        "n1",
        owns,
        backoff=Backoff(initial=0.15, jitter=0.0),
        attempts=4,
        sleep=others_write_while_we_wait,
    )
    await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t", node=stale)
    assert [t["key"] for t in fake_apiserver.get("nodes", "n1")["spec"]["taints"]] == [OURS]
    assert waits == [0.0, 0.15]
    patches = fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")
    assert [r.status for r in patches] == [422, 422, 200]


async def test_a_race_lost_after_server_errors_is_retried_at_once(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """Two 503s climb the backoff; then another writer changes the Node while our PATCH is
    in flight. That lost race is retried at once from a fresh read, without the wait the
    server's failures had reached."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.add("PATCH", r"/nodes/n1$", status=503, times=2)
    waits: list[float] = []
    writes: list[asyncio.Task[None]] = []

    async def write_while_held(held: FaultRule) -> None:
        await wait_until(lambda: held.hits == 1, what="our PATCH held by the server")
        fake_apiserver.patch("nodes", "n1", {"metadata": {"labels": {"other": "x"}}})
        fake_apiserver.faults.release(held)

    async def record(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:  # after the second 503: the next PATCH meets another writer
            held = fake_apiserver.faults.hang("PATCH", r"/nodes/n1$", seconds=30)
            writes.append(asyncio.create_task(write_while_held(held)))

    patcher = NodePatcher(
        async_kube, "n1", owns, backoff=Backoff(initial=0.15, jitter=0.0), sleep=record
    )
    await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t")
    await asyncio.gather(*writes)
    assert [t["key"] for t in fake_apiserver.get("nodes", "n1")["spec"]["taints"]] == [OURS]
    assert waits == [0.15, 0.3, 0.0]
    patches = fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")
    assert [r.status for r in patches] == [503, 503, 422, 200]


async def test_a_failed_reread_after_a_lost_race_is_retried(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """The read that tells a lost race from an invalid patch meets a 503: that is a server
    failure, waited out and retried, not the end of the write."""
    fake_apiserver.create(kubeobjects.node("n1"))
    stale = fake_apiserver.get("nodes", "n1")
    fake_apiserver.patch("nodes", "n1", {"metadata": {"labels": {"other": "x"}}})
    fake_apiserver.faults.add("GET", r"/nodes/n1$", status=503, times=1)
    fast = Backoff(initial=0.01, jitter=0.0)
    patcher = NodePatcher(async_kube, "n1", owns, backoff=fast)
    await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t", node=stale)
    assert [t["key"] for t in fake_apiserver.get("nodes", "n1")["spec"]["taints"]] == [OURS]
    gets = fake_apiserver.requests(method="GET", path_contains="/nodes/n1")
    assert [r.status for r in gets][-2:] == [503, 200]


async def test_a_long_retry_after_is_honoured_up_to_the_cap(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """A 429 asking for an hour waits the policy's cap instead, then the write lands."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.add("PATCH", r"/nodes/n1$", status=429, times=1, retry_after=3600)
    patcher = NodePatcher(async_kube, "n1", owns, backoff=Backoff(initial=0.01, cap=0.2))
    async with asyncio.timeout(10):
        await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t")
    first, second = fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")
    assert [first.status, second.status] == [429, 200]
    assert second.monotonic - first.monotonic >= 0.2  # Retry-After honoured, capped at 0.2 s


async def test_the_attempt_cap_ends_a_persistent_failure(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """With the server down for good, exactly `attempts` PATCHes go out, then the error."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.add("PATCH", r"/nodes/n1$", status=503, times=None)
    fast = Backoff(initial=0.001, factor=1.0, cap=0.001, jitter=0.0)
    patcher = NodePatcher(async_kube, "n1", owns, backoff=fast, attempts=3)
    with pytest.raises(Unavailable):
        await patcher.update(lambda node: taint_ops(node, ensure=Taint(OURS)), what="t")
    assert len(fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")) == 3


async def test_the_deadline_ends_retries_before_the_attempt_cap(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """A wait that would cross the deadline (on the patcher's clock) is not taken."""
    fake_apiserver.create(kubeobjects.node("n1"))
    fake_apiserver.faults.add("PATCH", r"/nodes/n1$", status=503, times=None)
    now = 1e9  # the patcher's own clock, far from time.monotonic()
    patcher = NodePatcher(
        async_kube, "n1", owns, backoff=Backoff(initial=1.0, jitter=0.0), monotonic=lambda: now
    )
    with pytest.raises(Unavailable):
        await patcher.update(
            lambda node: taint_ops(node, ensure=Taint(OURS)), what="t", deadline=now + 0.5
        )
    assert len(fake_apiserver.requests(method="PATCH", path_contains="/nodes/n1")) == 1


async def test_no_change_sends_nothing(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """An idempotent builder that yields no ops makes no PATCH."""
    fake_apiserver.create(kubeobjects.node("n1", taints=[{"key": OURS, "effect": "NoSchedule"}]))
    await NodePatcher(async_kube, "n1", owns).update(
        lambda node: taint_ops(node, ensure=Taint(OURS)), what="t"
    )
    assert fake_apiserver.requests(method="PATCH") == []


async def test_foreign_keys_are_refused_before_sending(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """A builder that would touch someone else's taint raises and sends nothing."""
    fake_apiserver.create(
        kubeobjects.node("n1", taints=[{"key": "dedicated", "effect": "NoSchedule"}])
    )
    with pytest.raises(OwnershipError):
        await NodePatcher(async_kube, "n1", owns).update(
            lambda node: taint_ops(node, remove="dedicated"), what="t"
        )
    assert fake_apiserver.requests(method="PATCH") == []


async def test_events_are_created_then_aggregated(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """The first Event is created in 'default' for a Node; a repeat bumps its count."""
    now = [1000.0]
    recorder = EventRecorder(
        async_kube, component="kubelet-companion", host="n1", clock=lambda: now[0]
    )
    node = ObjectRef.node("n1")
    assert await recorder.emit(node, "Normal", "Shutdown", "shutting down")
    assert not await recorder.emit(node, "Normal", "Shutdown", "shutting down", min_interval=60)
    now[0] += 120
    assert await recorder.emit(node, "Normal", "Shutdown", "shutting down", min_interval=60)
    (event,) = fake_apiserver.list("events", "default")
    assert (event["reason"], event["count"], event["involvedObject"]["kind"]) == (
        "Shutdown",
        2,
        "Node",
    )
    assert event["source"] == {"component": "kubelet-companion", "host": "n1"}


async def test_event_failures_are_swallowed(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """Events are best effort: a 500 is logged and reported as not sent, never raised."""
    fake_apiserver.faults.add("POST", r"/events$", status=500, times=1)
    recorder = EventRecorder(async_kube, component="c", host="n1")
    assert not await recorder.emit(ObjectRef.node("n1"), "Warning", "X", "y")
    assert fake_apiserver.list("events", "default") == []


async def test_event_memory_is_bounded(
    async_kube: AsyncKube, fake_apiserver: FakeApiServer
) -> None:
    """Distinct messages do not grow the recorder's memory past its bound."""
    recorder = EventRecorder(async_kube, component="c", host="n1", remembered=3)
    for index in range(5):
        assert await recorder.emit(ObjectRef.node("n1"), "Warning", "Drift", f"value {index}")
    assert len(recorder._seen) == 3
    assert len(fake_apiserver.list("events", "default")) == 5
