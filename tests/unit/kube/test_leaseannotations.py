"""Our annotations on the Lease: guarded read-change-writes, with and without an elector."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.kube.errors import Conflict, LeadershipLost
from agent.kube.leaderelection import ElectionTiming, LeaderElector
from agent.kube.leaseannotations import LeaderAnnotations, LeaseAnnotations
from tests.harness.clock import HandClock
from tests.harness.leases import InMemoryLeases
from tests.harness.waiting import wait_until

KEY = "kubelet-companion.io/node-taints"
OTHER = "kubelet-companion.io/recent-evictions"
TIMING = ElectionTiming(lease_duration=137, renew_deadline=107, retry_period=26, jitter=0.0)


def _annotations(leases: InMemoryLeases) -> dict[str, str]:
    return dict(leases.objects["descheduler"]["metadata"].get("annotations") or {})


async def test_without_an_elector_the_first_write_creates_a_lease_nobody_holds() -> None:
    """No Lease: a read is ``None``, an unchanged value writes nothing, and the first change
    creates the Lease with no holder (an elector may take it later) and sets the key."""
    leases = InMemoryLeases()
    store = LeaseAnnotations(leases.api("job"))
    assert await store.read(KEY) is None
    assert await store.update(KEY, lambda current: current) is None
    assert "descheduler" not in leases.objects
    assert await store.update(KEY, lambda _current: "v1") == "v1"
    assert leases.objects["descheduler"]["spec"] == {}
    assert _annotations(leases) == {KEY: "v1"}
    assert await store.read(KEY) == "v1"


async def test_without_an_elector_a_change_is_made_to_what_the_lease_holds_now() -> None:
    """Someone writes between our read and our PUT: the 409 makes us read again, and the
    change is made to their value; other annotations are kept; ``None`` removes the key."""
    leases = InMemoryLeases()
    store = LeaseAnnotations(leases.api("job"))
    await store.update(OTHER, lambda _current: "theirs")
    await store.update(KEY, lambda _current: "a")

    def someone_writes() -> None:
        leases.objects["descheduler"]["metadata"]["annotations"][KEY] = "a,b"
        leases.bump()

    leases.faults["job"].before_replace.append(someone_writes)
    assert await store.update(KEY, lambda current: f"{current},c") == "a,b,c"
    assert _annotations(leases) == {OTHER: "theirs", KEY: "a,b,c"}
    assert await store.update(KEY, lambda _current: None) is None
    assert _annotations(leases) == {OTHER: "theirs"}


class _AlwaysChanged:
    """A Lease someone else writes between every read and every PUT of ours."""

    name = "descheduler"

    def __init__(self) -> None:
        self.puts = 0

    async def get(self) -> dict[str, Any]:
        return {"metadata": {"name": self.name, "resourceVersion": "1"}, "spec": {}}

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG002 - the LeaseApi signature
        raise AssertionError("the Lease exists")

    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG002 - the LeaseApi signature
        self.puts += 1
        raise Conflict("the object has been modified", status=409, reason="Conflict")


async def test_without_an_elector_a_lease_that_keeps_changing_is_a_conflict() -> None:
    """A write that loses every race gives up with ``Conflict`` after its attempts."""
    lease = _AlwaysChanged()
    with pytest.raises(Conflict):
        await LeaseAnnotations(lease).update(KEY, lambda _current: "b")
    assert lease.puts == LeaseAnnotations.ATTEMPTS


async def test_a_change_that_raises_writes_nothing() -> None:
    """A change may refuse (a record that would grow too large): nothing is written."""
    leases = InMemoryLeases()
    store = LeaseAnnotations(leases.api("job"))
    await store.update(KEY, lambda _current: "a")

    def refuse(_current: str | None) -> str | None:
        raise ValueError("too large")

    with pytest.raises(ValueError, match="too large"):
        await store.update(KEY, refuse)
    assert _annotations(leases) == {KEY: "a"}


async def test_keys_outside_our_domain_are_refused() -> None:
    """Only ``kubelet-companion.io/`` keys are ours to write."""
    store = LeaseAnnotations(InMemoryLeases().api("job"))
    with pytest.raises(ValueError, match="not ours"):
        await store.update("example.com/x", lambda _current: "v")


async def test_with_an_elector_only_the_leader_writes_and_its_successor_reads_it() -> None:
    """The leader's change is a guarded renew; a follower's raises ``LeadershipLost`` and
    writes nothing; an unchanged value sends no write; the next leader reads what the
    last one wrote (taking the Lease over keeps its annotations)."""
    leases, clock = InMemoryLeases(), HandClock(start=1000.0)
    leader = LeaderElector(leases.api("a"), clock=clock, identity="a", timing=TIMING)
    follower = LeaderElector(leases.api("b"), clock=clock, identity="b", timing=TIMING)
    runs = [asyncio.create_task(leader.run())]
    await wait_until(leader.leading.is_set, "a leads")
    runs.append(asyncio.create_task(follower.run()))
    await wait_until(lambda: leases.calls["b"], "b tried")
    ours = LeaderAnnotations(leader)
    assert await ours.update(KEY, lambda current: (current or "") + "x") == "x"
    writes = leases.calls["a"].count("replace")
    assert await ours.update(KEY, lambda current: current) == "x"
    assert leases.calls["a"].count("replace") == writes
    with pytest.raises(LeadershipLost):
        await LeaderAnnotations(follower).update(KEY, lambda _current: "forged")
    assert _annotations(leases) == {KEY: "x"}
    leader.stop()
    await runs[0]
    await wait_until(  # the follower tries again every retry period
        follower.leading.is_set,
        "the follower to lead",
        each=lambda: clock.advance(TIMING.retry_period),
    )
    successor = LeaderAnnotations(follower)
    assert await successor.read(KEY) == "x"
    assert await successor.update(KEY, lambda current: f"{current}y") == "xy"
    follower.stop()
    await runs[1]
