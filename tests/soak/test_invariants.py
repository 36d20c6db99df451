"""The soak's rules on made-up observations: each one fires on its violation, and not on
the same story told within its stated allowances."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from tests.soak.invariants import judge
from tests.soak.plan import PodPlan, Scenario
from tests.soak.scenario import Interval, Observations

SCENARIO = Scenario(
    seed=0,
    index=0,
    buckets=((0, 1), (1000, 1), (2_000_000_000, 1)),
    mode="delete",
    time_scale=1.0,
    pods=(
        PodPlan("low", 0, 5, "normal"),
        PodPlan("mid", 1000, 5, "normal"),
    ),
    ready_at=0.5,
    flaps_after_ready=(),
    power_off_at=1.0,
    job_end="cancel",
    cancel_delay=0.1,
    power_off_again_after=None,
    short_logind_delay=False,
)
PID = 4242


def story() -> Observations:
    """A clean run: armed at 100, PowerOff at 101 (budget 3 s), phases in order, the lock
    released at 103.5 (the budget ends at 104), cancelled at 105, a lock again at 105.3 and
    the taint gone at 105.2."""
    obs = Observations(SCENARIO, armed=100.0, ended=110.0)
    obs.signals = [(True, 101.0), (False, 105.0)]
    obs.power_offs = [101.0]
    obs.records = [(1_700_000_000.0, 101.0, 3)]
    obs.lock_samples = [(100.0 + i / 10, (PID,)) for i in range(36)]
    obs.lock_samples += [(103.6 + i / 10, ()) for i in range(17)]
    obs.lock_samples += [(105.3 + i / 10, (PID,)) for i in range(40)]
    obs.created = {"low": 99.0, "mid": 99.0}
    obs.removed = {"low": 101.4, "mid": 102.3}
    obs.deletions = [(101.01, "low"), (102.0, "mid")]
    obs.shutdown_taint = [(101.05, True), (105.2, False)]
    return obs


def _late_lock(obs: Observations) -> None:
    obs.lock_samples = [(s, (PID,)) if 103.6 <= s < 105 else (s, p) for s, p in obs.lock_samples]


def _slightly_late_lock(obs: Observations) -> None:
    obs.lock_samples.append((104.45, (PID,)))


def _two_locks(obs: Observations) -> None:
    obs.lock_samples.append((100.55, (PID, PID)))


def _phase_early(obs: Observations) -> None:
    obs.deletions = [(101.01, "low"), (101.2, "mid")]


def _phase_early_but_done(obs: Observations) -> None:
    obs.deletions = [(101.01, "low"), (101.5, "mid")]


def _no_lock_after_cancel(obs: Observations) -> None:
    obs.lock_samples = [(s, ()) if s >= 105.3 else (s, p) for s, p in obs.lock_samples]


def _lock_late_after_agent_restart(obs: Observations) -> None:
    obs.agent_down = [Interval("agent-kill", 104.9, 105.5)]
    obs.lock_samples = [(s, ()) if 105.3 <= s < 108 else (s, p) for s, p in obs.lock_samples]


def _taint_stays(obs: Observations) -> None:
    obs.shutdown_taint = [(101.05, True)]


def _taint_late_after_api_fault(obs: Observations) -> None:
    obs.api_faults = [Interval("api-503", 104.5, 105.5)]
    obs.shutdown_taint = [(101.05, True), (111.0, False)]
    obs.ended = 115.0


def _next_shutdown_before_the_time_is_up(obs: Observations) -> None:
    obs.signals.append((True, 105.4))
    obs.records.append((1_700_000_004.4, 105.4, 3))
    obs.lock_samples = [(sent, pids) for sent, pids in obs.lock_samples if sent < 108.5]
    obs.shutdown_taint = [(101.05, True)]  # the removal lost its races, then the taint is wanted


def _taint_late_after_logind_restart(obs: Observations) -> None:
    obs.signals = [(True, 101.0)]  # logind restarted at 105 and forgot the shutdown
    obs.logind_down = [Interval("logind-restart", 105.0, 106.0)]
    obs.shutdown_taint = [(101.05, True), (106.6, False)]


def _agent_starting_when_cancelled(obs: Observations) -> None:
    obs.agent_down = [Interval("agent-kill", 104.0, 104.8)]  # started again, still starting
    obs.lock_samples = [(s, ()) if 104.0 <= s < 106.5 else (s, p) for s, p in obs.lock_samples]


def _old_shutdown_resumed_in_a_new_one(obs: Observations) -> None:
    # Killed in the first shutdown; it was called off and a new PowerOff came while the
    # agent was away: the restarted agent resumes the first record, its deadlines passed.
    obs.signals = [(True, 101.0), (False, 101.3), (True, 101.6)]
    obs.agent_down = [Interval("agent-kill", 101.2, 101.8)]
    obs.lock_samples = [(s, ()) if s >= 101.2 else (s, p) for s, p in obs.lock_samples]
    obs.deletions = [(101.01, "low"), (102.05, "low"), (102.06, "mid")]
    obs.removed = {"low": 102.5, "mid": 102.3}
    obs.shutdown_taint = [(101.05, True)]


def _pod_created_while_the_watch_was_down(obs: Observations) -> None:
    # A phase-0 pod created while the watches were broken, left running while phase 1 began.
    obs.scenario = dataclasses.replace(
        SCENARIO, pods=(*SCENARIO.pods, PodPlan("late", 0, 5, "normal"))
    )
    obs.created["late"] = 100.5
    obs.watch_breaks = [100.4]
    obs.deletions = [(101.01, "low"), (101.5, "mid")]


def _pod_created_after_the_shutdown_began(obs: Observations) -> None:
    _pod_created_while_the_watch_was_down(obs)
    obs.created["late"] = 101.2  # after PrepareForShutdown(true) at 101.0: not phase 0's


def _torn(obs: Observations) -> None:
    obs.torn_reads = ["JSONDecodeError in '{\"versi'"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(lambda _obs: None, [], id="clean"),
        pytest.param(_late_lock, ["lock-released"], id="lock-held-past-budget"),
        pytest.param(_slightly_late_lock, [], id="lock-within-slack"),
        pytest.param(_two_locks, ["one-lock"], id="two-locks"),
        pytest.param(_phase_early, ["phase-order"], id="phase-before-deadline"),
        pytest.param(_phase_early_but_done, [], id="phase-early-after-previous-done"),
        pytest.param(_no_lock_after_cancel, ["cancel-undone"], id="no-lock-after-cancel"),
        pytest.param(_lock_late_after_agent_restart, [], id="agent-down-allowance"),
        pytest.param(_taint_stays, ["cancel-undone"], id="taint-stays"),
        pytest.param(_taint_late_after_api_fault, [], id="api-fault-allowance"),
        pytest.param(
            _next_shutdown_before_the_time_is_up, [], id="next-shutdown-within-the-second"
        ),
        pytest.param(_taint_late_after_logind_restart, [], id="logind-down-allowance"),
        pytest.param(_agent_starting_when_cancelled, [], id="agent-starting-allowance"),
        pytest.param(_old_shutdown_resumed_in_a_new_one, [], id="resumed-record-deadlines"),
        pytest.param(
            _pod_created_while_the_watch_was_down,
            ["phase-order"],
            id="pod-created-while-the-watch-was-down",
        ),
        pytest.param(_pod_created_after_the_shutdown_began, [], id="pod-created-after-the-start"),
        pytest.param(_torn, ["state-file"], id="torn-state-file"),
    ],
)
def test_each_rule_fires_on_its_violation_only(
    change: Callable[[Observations], None], expected: list[str]
) -> None:
    """A violation of one rule is reported under that rule, and nothing else is."""
    obs = story()
    change(obs)
    assert sorted({v.invariant for v in judge(obs).violations}) == expected
