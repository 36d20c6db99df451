"""The one retry policy: bounded jitter, Retry-After honoured and capped, deadline never crossed."""

import random

import pytest

from agent.retrying import Backoff, RetryPolicy

NO_JITTER = Backoff(initial=0.1, factor=2.0, cap=1.0, jitter=0.0)


def test_backoff_doubles_up_to_the_cap() -> None:
    """Without jitter the delays are initial * factor**n, capped."""
    assert [NO_JITTER.delay(n) for n in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


@pytest.mark.parametrize("attempt", [0, 1, 3, 10, 50])
def test_jitter_stays_within_its_bound(attempt: int) -> None:
    """Each delay lies in [base, base * (1 + jitter)], and jitter does spread them."""
    backoff = Backoff(initial=0.1, factor=2.0, cap=1.0, jitter=0.2)
    base = min(1.0, 0.1 * 2.0**attempt)
    random.seed(attempt)
    delays = [backoff.delay(attempt) for _ in range(2000)]
    assert all(base <= delay <= base * 1.2 for delay in delays)
    assert max(delays) - min(delays) > base * 0.1  # spread, not one value for every agent


def test_a_huge_failure_count_does_not_overflow() -> None:
    """Delays stay at the cap however long a loop has been failing."""
    assert RetryPolicy(NO_JITTER).wait(100_000) == 1.0


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [
        pytest.param(0.5, 0.5, id="honoured-above-the-backoff"),
        pytest.param(0.01, 0.1, id="never-shortens-the-backoff"),
        pytest.param(3600.0, 2.0, id="capped"),
        pytest.param(None, 0.1, id="absent"),
        pytest.param(0.0, 0.1, id="zero"),
    ],
)
def test_retry_after_is_honoured_and_capped(retry_after: float | None, expected: float) -> None:
    """A server's Retry-After lengthens the wait, but never beyond retry_after_cap."""
    policy = RetryPolicy(NO_JITTER, retry_after_cap=2.0)
    assert policy.wait(1, retry_after=retry_after) == expected


def test_retry_after_is_capped_at_the_backoff_cap_by_default() -> None:
    """Without an explicit cap, Retry-After is bounded by the backoff's own cap."""
    assert RetryPolicy(NO_JITTER).wait(1, retry_after=3600.0) == 1.0


def test_the_attempt_cap_counts_every_try() -> None:
    """attempts=3: two failures may be retried, the third is final."""
    policy = RetryPolicy(NO_JITTER, attempts=3)
    assert policy.next_wait(1) == 0.1
    assert policy.next_wait(2) == 0.2
    assert policy.next_wait(3) is None


def test_no_attempt_cap_retries_for_ever() -> None:
    """attempts=None never gives up on its own."""
    assert RetryPolicy(NO_JITTER).next_wait(10_000) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_a_deadline_is_never_crossed(seed: int) -> None:
    """Following the policy's waits never ends past the deadline, Retry-After or not."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test input, not crypto
    now = [100.0]
    policy = RetryPolicy(
        Backoff(initial=0.05, factor=2.0, cap=1.0, jitter=0.5),
        retry_after_cap=3.0,
        monotonic=lambda: now[0],
    )
    deadline = 100.0 + rng.uniform(0.5, 10.0)
    failures = 0
    while True:
        failures += 1
        retry_after = rng.choice([None, 0.3, 2.5, 600.0])
        wait = policy.next_wait(failures, retry_after=retry_after, deadline=deadline)
        if wait is None:
            break
        now[0] += wait
        assert now[0] <= deadline
    assert failures > 1  # it did retry before giving up


def test_a_wait_that_would_cross_the_deadline_is_refused() -> None:
    """Giving up is the answer when even one more wait ends past the deadline."""
    policy = RetryPolicy(NO_JITTER, monotonic=lambda: 10.0)
    assert policy.next_wait(1, deadline=10.05) is None
    assert policy.next_wait(1, deadline=10.1) == 0.1
