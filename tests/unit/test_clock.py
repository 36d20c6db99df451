"""The one race "until something happens, or a timer": who wins, and who is cancelled.

Ownership is the rule under test: what the race made itself (the timer, a task for each
coroutine, an event's waiter) never outlives it, however it ends; a future the caller
handed in is only watched, never cancelled.
"""

from __future__ import annotations

import asyncio

import pytest

from agent.clock import first_done, sleep_or_done, sleep_or_set
from tests.harness.clock import HandClock


def _others() -> set[asyncio.Task[object]]:
    """Tasks still pending besides the test's own."""
    me = asyncio.current_task()
    return {task for task in asyncio.all_tasks() if task is not me and not task.done()}


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_an_event_already_set_wins_without_a_sleep() -> None:
    """A set event counts at once: no timer is started, nothing is left behind."""
    event = asyncio.Event()
    event.set()
    assert await sleep_or_set(HandClock(), 3600, event)
    assert not _others()


async def test_the_timer_wins_and_the_waiter_is_cancelled() -> None:
    """``False`` when the time runs out; the event's waiter does not outlive the race."""
    clock = HandClock()
    race = asyncio.ensure_future(sleep_or_set(clock, 10, asyncio.Event()))
    await _settle()
    clock.advance(10)
    assert await race is False
    await _settle()
    assert not _others()


async def test_the_event_wins_and_the_timer_is_cancelled() -> None:
    """``True`` when an event is set first; the timer does not outlive the race."""
    event = asyncio.Event()
    race = asyncio.ensure_future(sleep_or_set(HandClock(), 10, event))
    await _settle()
    event.set()
    assert await race is True
    await _settle()
    assert not _others()


async def test_no_timer_waits_for_the_event_alone() -> None:
    """``seconds=None``: no timer at all, however far the clock moves."""
    clock, event = HandClock(), asyncio.Event()
    race = asyncio.ensure_future(sleep_or_set(clock, None, event))
    clock.advance(1e9)
    await _settle()
    assert not race.done()
    event.set()
    assert await race is True


async def test_a_callers_future_is_watched_never_cancelled() -> None:
    """The timer wins over a task handed in: the task goes on, and can still finish."""
    clock, release = HandClock(), asyncio.Event()

    async def work() -> str:
        await release.wait()
        return "done"

    task = asyncio.ensure_future(work())
    race = asyncio.ensure_future(sleep_or_done(clock, 5, task))
    await _settle()
    clock.advance(5)
    await race
    assert not task.done()
    release.set()
    assert await task == "done"


async def test_a_coroutine_is_the_race_own_and_is_cancelled_when_it_loses() -> None:
    """A coroutine handed in becomes the race's task, cancelled once another wait wins."""
    started, cancelled, winner = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def loser() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    race = asyncio.ensure_future(first_done(loser(), winner.wait()))
    await started.wait()
    winner.set()
    await race
    await _settle()
    assert cancelled.is_set()
    assert not _others()


async def test_a_finished_callers_future_ends_the_race_and_keeps_its_error() -> None:
    """A failed task of the caller's ends the race without raising; its owner reads it."""
    failed: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    failed.set_exception(RuntimeError("boom"))
    await sleep_or_done(HandClock(), 3600, failed)
    with pytest.raises(RuntimeError, match="boom"):
        failed.result()
    await _settle()
    assert not _others()


async def test_cancelling_the_caller_leaves_nothing_of_the_race_but_the_callers_own() -> None:
    """A cancel of the waiting caller cancels the race's timer and waiters, and propagates;
    a future the caller handed in is still not cancelled."""
    mine: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    race = asyncio.ensure_future(sleep_or_done(HandClock(), 3600, mine, asyncio.Event().wait()))
    await _settle()
    race.cancel()
    with pytest.raises(asyncio.CancelledError):
        await race
    await _settle()
    assert not _others()
    assert not mine.cancelled()
    mine.cancel()


async def test_the_timer_runs_from_the_call_not_from_when_its_task_starts() -> None:
    """Time that passes between the call and the timer task's first step counts: a clock
    moved by the full wait before the race got to run ends it at once, instead of the
    deadline moving out by that much (a cycle loop on a test's clock waited forever)."""
    clock = HandClock()
    event = asyncio.Event()
    race = asyncio.ensure_future(sleep_or_set(clock, 60, event))
    await asyncio.sleep(0)  # the race has started; its timer task has not run yet
    clock.advance(60)
    assert await asyncio.wait_for(race, 5) is False
