"""Absolute phase deadlines: fixed at the start, so a late phase never stretches the total."""

from __future__ import annotations

import pytest

from agent.shutdown.deadlines import TAINT_WAIT_SECONDS, TAINT_WAIT_SHARE, deadlines_from


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
