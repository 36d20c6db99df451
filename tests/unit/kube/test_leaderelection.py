"""The leader elector's state machine, on a hand-driven clock and an in-memory Lease API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from agent.kube.errors import LeadershipLost, Timeout, TooManyRequests, Unavailable
from agent.kube.leaderelection import ElectionTiming, LeaderElector
from agent.kube.leaseannotations import LeaderAnnotations
from agent.kubesemantics.timestamps import parse_rfc3339
from tests.harness.clock import HandClock, SkewedClock
from tests.harness.leases import InMemoryLeases, settle
from tests.harness.waiting import wait_until

TIMING = ElectionTiming(lease_duration=137, renew_deadline=107, retry_period=26, jitter=0.0)


@pytest.fixture
def leases() -> InMemoryLeases:
    return InMemoryLeases()


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


def elector(
    leases: InMemoryLeases,
    clock: HandClock | SkewedClock,
    identity: str,
    events: list[str] | None = None,
) -> LeaderElector:
    record = events if events is not None else []
    return LeaderElector(
        leases.api(identity),
        clock=clock,
        identity=identity,
        timing=TIMING,
        on_started_leading=lambda: record.append(f"{identity} started"),
        on_stopped_leading=lambda: record.append(f"{identity} stopped"),
    )


@asynccontextmanager
async def running(leases: InMemoryLeases, *electors: LeaderElector) -> AsyncIterator[None]:
    tasks = [asyncio.create_task(one.run()) for one in electors]
    try:
        yield
    finally:
        for one in electors:
            one.stop()
            leases.unstall(one.identity)
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)


async def tick(clock: HandClock, seconds: float) -> None:
    clock.advance(seconds)
    await settle()


def calls_of(leases: InMemoryLeases, identity: str, verb: str) -> Callable[[], int]:
    return lambda: sum(1 for call in leases.calls[identity] if call == verb)


async def test_a_lone_candidate_creates_the_lease_with_a_full_record(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """With no Lease, the candidate creates one naming itself, with client-go's fields."""
    events: list[str] = []
    alone = elector(leases, clock, "a", events)
    async with running(leases, alone):
        await wait_until(alone.leading.is_set, "a leads")
        spec = leases.spec()
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 137
        assert spec["leaseTransitions"] == 0
        assert spec["acquireTime"] == spec["renewTime"]
        assert parse_rfc3339(spec["renewTime"]) == pytest.approx(clock.now(), abs=1e-5)
        assert alone.is_leader
        assert events == ["a started"]


async def test_of_two_candidates_only_one_leads(leases: InMemoryLeases, clock: HandClock) -> None:
    """Two candidates on one Lease: one leads, the other sees it as holder and follows."""
    first, second = elector(leases, clock, "a"), elector(leases, clock, "b")
    async with running(leases, first, second):
        await wait_until(first.leading.is_set or second.leading.is_set(), "a leader")
        await wait_until(calls_of(leases, "b", "get"), "b tried")
        await wait_until(calls_of(leases, "a", "get"), "a tried")
        for _ in range(4):  # several renew rounds: the roles stay put
            await tick(clock, 26)
        leader, follower = (first, second) if first.leading.is_set() else (second, first)
        assert leader.is_leader
        assert not follower.is_leader
        assert follower.observed_holder == leader.identity
        assert leases.spec()["holderIdentity"] == leader.identity


async def test_the_leader_renews_with_one_put_and_keeps_acquire_time(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """A renew is a guarded PUT from our last write (no GET); acquireTime stays put."""
    leader = elector(leases, clock, "a")
    async with running(leases, leader):
        await wait_until(leader.leading.is_set, "a leads")
        acquired = leases.spec()["acquireTime"]
        gets = calls_of(leases, "a", "get")()
        await tick(clock, 26)
        await wait_until(lambda: calls_of(leases, "a", "replace")() == 1, "a renewed")
        assert calls_of(leases, "a", "get")() == gets
        spec = leases.spec()
        assert spec["acquireTime"] == acquired
        assert spec["renewTime"] != acquired
        assert spec["leaseTransitions"] == 0


async def test_a_follower_takes_over_only_after_the_record_stopped_changing_for_the_lease(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """Expiry is judged by when the follower last saw the record change, on its own clock:
    the stalled leader's renewTime, written an hour in the past by its wall clock, does not
    let the follower in early."""
    stalled = elector(leases, SkewedClock(clock, -3600.0), "a")
    follower = elector(leases, clock, "b")
    async with running(leases, stalled):
        await wait_until(stalled.leading.is_set, "a leads")
        async with running(leases, follower):
            await wait_until(lambda: calls_of(leases, "b", "get")() == 1, "b's first try")
            leases.faults["a"].stalled = True
            for tries in range(2, 7):  # tries at +26 ... +130 s: the lease (137 s) holds
                await tick(clock, 26)
                await wait_until(lambda n=tries: calls_of(leases, "b", "get")() == n, "b tried")
                assert not follower.leading.is_set(), f"b took over at try {tries}"
            await tick(clock, 26)  # +156 s: the record has not changed for 137 s
            await wait_until(follower.leading.is_set, "b takes over")
            assert leases.spec()["holderIdentity"] == "b"
            assert leases.spec()["leaseTransitions"] == 1
            assert not stalled.is_leader


async def test_a_stalled_leader_stops_being_leader_at_the_renew_deadline(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """A renew stuck in a hung call cannot keep us leader: at renew-deadline, is_leader is
    False and check() raises, even before the renewing task notices."""
    events: list[str] = []
    leader = elector(leases, clock, "a", events)
    async with running(leases, leader):
        await wait_until(leader.leading.is_set, "a leads")
        leases.faults["a"].stalled = True
        await tick(clock, 106.9)
        assert leader.is_leader
        clock.t += 0.1  # exactly the deadline, and no task has run since
        assert not leader.is_leader
        with pytest.raises(LeadershipLost):
            leader.check()
        clock.advance(0)
        await wait_until(leader.not_leading.is_set, "a steps down")
        assert events == ["a started", "a stopped"]


async def test_a_leader_whose_renews_fail_steps_down_and_campaigns_again(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """When every renew fails until the deadline the leader steps down; once the API answers
    again it re-acquires its own Lease at once (it is still the holder)."""
    events: list[str] = []
    leader = elector(leases, clock, "a", events)
    async with running(leases, leader):
        await wait_until(leader.leading.is_set, "a leads")
        leases.faults["a"].errors = [Unavailable("503", status=503)] * 10_000
        for _ in range(5):
            await tick(clock, 26)
        await wait_until(leader.not_leading.is_set, "a steps down")
        leases.faults["a"].errors = []
        await tick(clock, 26)
        await wait_until(leader.leading.is_set, "a leads again")
        assert events == ["a started", "a stopped", "a started"]
        assert leases.spec()["leaseTransitions"] == 0


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(Unavailable("503", status=503), id="5xx"),
        pytest.param(TooManyRequests("429", status=429, retry_after=1.0), id="429"),
        pytest.param(Timeout("timed out"), id="timeout"),
    ],
)
async def test_transient_errors_are_retried_with_backoff(
    leases: InMemoryLeases, clock: HandClock, error: Exception
) -> None:
    """A 5xx, a 429 or a timeout on the first read is retried after a short backoff, within
    the same try (not a retry period later)."""
    leases.faults["a"].errors = [error, error]  # type: ignore[list-item]  # all KubeErrors
    leader = elector(leases, clock, "a")
    start = clock.monotonic()
    async with running(leases, leader):
        await wait_until(lambda: calls_of(leases, "a", "get")() == 1, "first try")
        while not leader.leading.is_set():
            await tick(clock, 0.5)
        assert calls_of(leases, "a", "get")() == 3
        assert clock.monotonic() - start < TIMING.retry_period


async def test_a_clean_stop_releases_and_the_follower_takes_over_at_its_next_try(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """stop() clears holderIdentity, so the follower leads one retry later, not a lease later."""
    events: list[str] = []
    leader = elector(leases, clock, "a", events)
    follower = elector(leases, clock, "b", events)
    leading = asyncio.create_task(leader.run())
    await wait_until(leader.leading.is_set, "a leads")
    async with running(leases, follower):
        await wait_until(calls_of(leases, "b", "get"), "b tried")
        leader.stop()
        await asyncio.wait_for(leading, 5)
        assert leases.spec()["holderIdentity"] == ""
        assert events == ["a started", "a stopped"]
        await tick(clock, 26)
        await wait_until(follower.leading.is_set, "b takes over")
        assert leases.spec()["leaseTransitions"] == 1


async def test_a_409_on_the_takeover_write_is_a_lost_race_not_an_error(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """Someone writes between our read and our PUT: the PUT is 409, we stay a follower and
    keep campaigning."""
    leader = elector(leases, clock, "a")
    async with running(leases, leader):
        await wait_until(leader.leading.is_set, "a leads")
    candidate = elector(leases, clock, "b")
    leases.faults["b"].before_replace.append(leases.bump)
    async with running(leases, candidate):
        await wait_until(lambda: calls_of(leases, "b", "replace")() == 1, "b's PUT")
        await settle()
        assert not candidate.leading.is_set()
        assert leases.spec()["holderIdentity"] == ""
        await tick(clock, 26)
        await wait_until(candidate.leading.is_set, "b wins the next round")


async def test_a_leader_that_sees_another_holder_steps_down_at_once(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """If our renew is 409 and the Lease now names someone else, we stop leading right away."""
    leader = elector(leases, clock, "a")
    async with running(leases, leader):
        await wait_until(leader.leading.is_set, "a leads")
        leases.faults["a"].before_replace.append(lambda: leases.take_over("z"))
        await tick(clock, 26)
        await wait_until(leader.not_leading.is_set, "a steps down")
        assert leader.observed_holder == "z"


async def test_annotation_writes_need_leadership_and_survive_renews(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """Only the leader writes an annotation; renews keep it; after a 409 with us still the
    holder the write is repeated; a follower gets LeadershipLost."""
    leader, follower = elector(leases, clock, "a"), elector(leases, clock, "b")
    async with running(leases, leader, follower):
        await wait_until(leader.leading.is_set, "a leads")
        await wait_until(calls_of(leases, "b", "get"), "b tried")
        leases.faults["a"].before_replace.append(leases.bump)
        await LeaderAnnotations(leader).write("kubelet-companion.io/x", "1")
        await tick(clock, 26)
        await wait_until(lambda: calls_of(leases, "a", "replace")() == 3, "a renewed")
        annotations = leases.objects["descheduler"]["metadata"]["annotations"]
        assert annotations == {"kubelet-companion.io/x": "1"}
        with pytest.raises(LeadershipLost):
            await LeaderAnnotations(follower).write("kubelet-companion.io/x", "2")
        with pytest.raises(ValueError, match="not ours"):
            await LeaderAnnotations(leader).write("example.com/x", "2")


async def test_a_deposed_leader_cannot_write_an_annotation(
    leases: InMemoryLeases, clock: HandClock
) -> None:
    """A write that meets another holder after its 409 raises LeadershipLost, unchanged Lease."""
    leader = elector(leases, clock, "a")
    async with running(leases, leader):
        await wait_until(leader.leading.is_set, "a leads")
        leases.faults["a"].before_replace.append(lambda: leases.take_over("z"))
        with pytest.raises(LeadershipLost):
            await LeaderAnnotations(leader).write("kubelet-companion.io/x", "1")
        assert "annotations" not in leases.objects["descheduler"]["metadata"]


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [
        pytest.param(10, 10, 2, id="renew-not-below-lease"),
        pytest.param(10, 8, 8, id="retry-not-below-renew"),
        pytest.param(10, 8, 0, id="retry-zero"),
    ],
)
def test_timings_that_could_give_two_leaders_are_refused(
    lease: float, renew: float, retry: float
) -> None:
    """client-go's timing rules: lease > renew deadline > retry period > 0."""
    with pytest.raises(ValueError, match="must be"):
        ElectionTiming(lease_duration=lease, renew_deadline=renew, retry_period=retry)
