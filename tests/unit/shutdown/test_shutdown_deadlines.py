"""Absolute phase deadlines: fixed at the start, so a late phase never stretches the total."""

from __future__ import annotations

from agent.shutdown.deadlines import deadlines_from


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
