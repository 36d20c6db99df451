"""The churn guard's memory on the Lease: trimming, the stored form, and a leader change."""

from __future__ import annotations

import asyncio

import pytest

from agent.kube.errors import LeadershipLost
from agent.kube.evictionmemory import (
    RECENT_EVICTIONS_ANNOTATION,
    RecentEvictionsMemory,
    decode_recent_evictions,
    encode_recent_evictions,
    trim_recent_evictions,
)
from agent.kube.leaderelection import ElectionTiming, LeaderElector
from tests.harness.clock import HandClock
from tests.harness.leases import InMemoryLeases
from tests.harness.waiting import wait_until

NOW = 1_800_000_000.0
TIMING = ElectionTiming(lease_duration=137, renew_deadline=107, retry_period=26, jitter=0.0)


@pytest.mark.parametrize(
    ("given", "max_age", "max_entries", "kept"),
    [
        pytest.param({}, 600, 10, {}, id="empty"),
        pytest.param({"a": NOW - 10, "b": NOW - 599}, 600, 10, {"a": NOW - 10, "b": NOW - 599},
                     id="all-fresh"),
        pytest.param({"a": NOW - 10, "old": NOW - 601}, 600, 10, {"a": NOW - 10}, id="too-old"),
        pytest.param({"edge": NOW - 600}, 600, 10, {"edge": NOW - 600}, id="exactly-max-age"),
        pytest.param({"a": NOW - 1, "b": NOW - 3, "c": NOW - 2}, 600, 2,
                     {"a": NOW - 1, "c": NOW - 2}, id="bounded-keeps-newest"),
        pytest.param({"b": NOW - 1, "a": NOW - 1, "c": NOW - 1}, 600, 2,
                     {"a": NOW - 1, "b": NOW - 1}, id="bounded-tie-by-uid"),
        pytest.param({"a": NOW - 0.7}, 600, 10, {"a": NOW - 1}, id="floored-to-seconds"),
        pytest.param({"nan": float("nan"), "inf": float("inf")}, 600, 10, {}, id="not-finite"),
        pytest.param({"a": NOW - 1}, 0, 10, {}, id="no-cooldown-keeps-nothing-old"),
    ],
)  # fmt: skip
def test_trimming_keeps_the_newest_entries_within_the_longest_cooldown(
    given: dict[str, float], max_age: float, max_entries: int, kept: dict[str, float]
) -> None:
    """Entries older than max_age go; beyond max_entries the oldest go (ties by UID)."""
    assert trim_recent_evictions(given, now=NOW, max_age=max_age, max_entries=max_entries) == kept


def test_the_stored_form_is_compact_sorted_json_with_whole_seconds() -> None:
    """The annotation is a sorted, space-free JSON object of integer Unix seconds."""
    assert encode_recent_evictions({"b": 2.0, "a": 1.0}) == '{"a":1,"b":2}'


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        pytest.param(None, {}, id="absent"),
        pytest.param("", {}, id="empty"),
        pytest.param("{not json", {}, id="not-json"),
        pytest.param("[1, 2]", {}, id="not-an-object"),
        pytest.param('{"a":1,"b":"x","c":true,"d":2.5}', {"a": 1.0, "d": 2.5}, id="bad-values"),
    ],
)
def test_an_unreadable_annotation_is_no_memory_not_a_crash(
    text: str | None, decoded: dict[str, float]
) -> None:
    """Garbage in the annotation yields the readable entries only (or none), never an error."""
    assert decode_recent_evictions(text) == decoded


async def test_the_memory_survives_a_leader_change() -> None:
    """What one leader saved, the next leader loads after taking over the Lease."""
    leases, clock = InMemoryLeases(), HandClock(start=NOW - 1_750_000_000.0)
    first = LeaderElector(leases.api("a"), clock=clock, identity="a", timing=TIMING)
    second = LeaderElector(leases.api("b"), clock=clock, identity="b", timing=TIMING)
    first_run = asyncio.create_task(first.run())
    await wait_until(first.leading.is_set, "a leads")
    memory = RecentEvictionsMemory(first, clock=clock, max_age=600)
    assert await memory.load() == {}
    await memory.save({"uid-1": clock.now() - 5, "uid-gone": clock.now() - 601})
    assert leases.objects["descheduler"]["metadata"]["annotations"] == {
        RECENT_EVICTIONS_ANNOTATION: encode_recent_evictions({"uid-1": clock.now() - 5})
    }
    first.stop()
    await first_run
    second_run = asyncio.create_task(second.run())
    await wait_until(second.leading.is_set, "b leads")
    assert await RecentEvictionsMemory(second, clock=clock, max_age=600).load() == {
        "uid-1": float(int(clock.now() - 5))
    }
    second.stop()
    await second_run


async def test_only_the_leader_saves_and_an_unchanged_map_is_not_rewritten() -> None:
    """A follower's save raises LeadershipLost; the leader's second identical save sends
    no write."""
    leases, clock = InMemoryLeases(), HandClock(start=NOW - 1_750_000_000.0)
    leader = LeaderElector(leases.api("a"), clock=clock, identity="a", timing=TIMING)
    follower = LeaderElector(leases.api("b"), clock=clock, identity="b", timing=TIMING)
    runs = [asyncio.create_task(leader.run())]
    await wait_until(leader.leading.is_set, "a leads")
    runs.append(asyncio.create_task(follower.run()))
    await wait_until(lambda: leases.calls["b"], "b tried")
    memory = RecentEvictionsMemory(leader, clock=clock, max_age=600)
    await memory.save({"uid-1": clock.now()})
    writes = leases.calls["a"].count("replace")
    await memory.save({"uid-1": clock.now()})
    assert leases.calls["a"].count("replace") == writes
    with pytest.raises(LeadershipLost):
        await RecentEvictionsMemory(follower, clock=clock, max_age=600).save({"x": clock.now()})
    for one in (leader, follower):
        one.stop()
    await asyncio.gather(*runs)
