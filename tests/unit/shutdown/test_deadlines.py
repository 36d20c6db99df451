"""Absolute phase deadlines: fixed at the start, so a late phase never stretches the total."""

from __future__ import annotations

import pytest

from agent.config.shutdown import (
    PriorityBucket,
    budget_seconds,
    phase_windows,
)
from agent.kubesemantics.wellknown import SYSTEM_CRITICAL_PRIORITY
from agent.shutdown.deadlines import TAINT_WAIT_SECONDS, TAINT_WAIT_SHARE, Deadlines
from agent.shutdown.deadlines import deadlines_from as deadlines_at
from agent.shutdown.phases import plan_phases
from agent.shutdown.record import begin_record


def deadlines_from(start: float, budgets: list[int]) -> Deadlines:
    """The deadlines of phases of ``budgets`` seconds, in running order, offset from
    ``start`` as the phase plan sums them."""
    buckets = [PriorityBucket(index, seconds) for index, seconds in enumerate(budgets)]
    return deadlines_at(start, phase_windows(buckets))


def test_deadlines_are_start_plus_cumulative_budgets() -> None:
    """Phase i ends at start + sum(budgets[0..i]); the budget ends with the last phase."""
    deadlines = deadlines_from(100.0, [10, 20, 30])
    assert deadlines.phase_ends == (110.0, 130.0, 160.0)
    assert deadlines.budget_end == 160.0


def test_remaining_never_goes_negative() -> None:
    """Time left in the budget is clamped at zero once the budget is spent."""
    deadlines = deadlines_from(0.0, [5])
    assert deadlines.remaining(2.0) == 3.0
    assert deadlines.remaining(9.0) == 0.0


def test_zero_second_buckets_share_a_deadline() -> None:
    """A bucket of 0 s ends at the same moment as the one before it."""
    assert deadlines_from(0.0, [5, 0, 5]).phase_ends == (5.0, 5.0, 10.0)


def test_no_phases_means_the_budget_ends_at_the_start() -> None:
    """With no phases the lock is released at once."""
    assert deadlines_from(7.0, []).budget_end == 7.0


@pytest.mark.parametrize(
    ("budgets", "now", "expected_wait"),
    [
        ([30, 10], 0.0, TAINT_WAIT_SECONDS),  # a long first phase: the fixed cap
        ([4, 10], 0.0, TAINT_WAIT_SHARE * 4),  # a short one: a tenth of it
        ([4, 10], 3.0, TAINT_WAIT_SHARE * 1),  # resumed late: a tenth of what is left
        ([4, 10], 5.0, TAINT_WAIT_SHARE * 9),  # past the first deadline: the next decides
        ([0, 10], 0.0, TAINT_WAIT_SHARE * 10),  # a 0 s first bucket: the next phase pays
        ([4, 10], 20.0, 0.0),  # the budget is spent: no wait at all
    ],
)
def test_the_taint_wait_is_short_and_a_small_share_of_the_phase_left(
    budgets: list[int], now: float, expected_wait: float
) -> None:
    """The first pod request waits for the taint min(2 s, a tenth of the time left until the
    next phase deadline still ahead), so a taint the API server will not store costs the
    pods little."""
    deadlines = deadlines_from(0.0, budgets)
    assert deadlines.taint_wait_end(now) - now == pytest.approx(expected_wait)


def test_the_plan_the_record_and_the_deadlines_keep_one_clock() -> None:
    """Buckets in any order give the plan, a fresh record and the deadlines read from that
    record the same offsets (each phase's seconds and those before it) and the same budget."""
    buckets = (
        PriorityBucket(1000, 7),
        PriorityBucket(-5, 0),
        PriorityBucket(SYSTEM_CRITICAL_PRIORITY, 11),
        PriorityBucket(0, 3),
    )
    plan = plan_phases(buckets, [])
    record = begin_record(buckets, start_time=0.0, start_monotonic=50.0, boot_id="b", mode="delete")
    deadlines = deadlines_at(50.0, record.phases)
    assert [p.deadline_offset_seconds for p in plan.phases] == [0, 3, 10, 21]
    assert [p.deadline_offset_seconds for p in record.phases] == [0, 3, 10, 21]
    assert deadlines.phase_ends == (50.0, 53.0, 60.0, 71.0)
    assert plan.budget_seconds == record.budget_seconds == budget_seconds(buckets) == 21
    assert deadlines.budget_end == 50.0 + record.budget_seconds
