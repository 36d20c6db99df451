"""The gate's state machine: bootstrap-only never re-taints; continuous holds, with hysteresis."""

from __future__ import annotations

import itertools

from agent.readiness.gate import Action, Decision, GateState, GateView, Mode, decide

HOLD = 30.0
TAINTED = GateView(tainted=True, completed=False)
OPEN = GateView(tainted=False, completed=True)
READDED = GateView(tainted=True, completed=True)
FRESH_UNTAINTED = GateView(tainted=False, completed=False)


def _step(
    mode: Mode, ready: bool, view: GateView, now: float, state: GateState | None = None
) -> Decision:
    return decide(
        mode=mode, hold_time=HOLD, ready=ready, view=view, state=state or GateState(), now=now
    )


def test_bootstrap_lifts_once_ready() -> None:
    """A tainted node whose checks pass is lifted at once."""
    assert _step("bootstrap-only", True, TAINTED, 0).action is Action.LIFT


def test_bootstrap_holds_while_not_ready() -> None:
    """A tainted node whose checks fail keeps the taint and sets no timer."""
    decision = _step("bootstrap-only", False, TAINTED, 0)
    assert decision.action is Action.NONE
    assert decision.wake_at is None


def test_bootstrap_never_readds_after_completion() -> None:
    """Once completed and open, failing checks never bring the taint back, however long."""
    state = GateState()
    for now in (0.0, 100.0, 10_000.0):
        decision = _step("bootstrap-only", False, OPEN, now, state)
        assert decision.action is Action.NONE
        assert decision.wake_at is None
        state = decision.state


def test_bootstrap_marks_an_untainted_fresh_node_completed_once_ready() -> None:
    """A node registered without the taint is only marked completed, and never tainted."""
    assert _step("bootstrap-only", False, FRESH_UNTAINTED, 0).action is Action.NONE
    assert _step("bootstrap-only", True, FRESH_UNTAINTED, 0).action is Action.MARK_COMPLETED


def test_bootstrap_lifts_an_orphaned_taint_on_a_completed_node() -> None:
    """A gate taint found on a completed node is lifted when ready, so it cannot be orphaned."""
    assert _step("bootstrap-only", True, READDED, 0).action is Action.LIFT
    assert _step("bootstrap-only", False, READDED, 0).action is Action.NONE


def test_continuous_first_lift_is_immediate() -> None:
    """In continuous mode the bootstrap lift waits for nothing but the checks."""
    assert _step("continuous", True, TAINTED, 0).action is Action.LIFT


def test_continuous_readds_only_after_the_hold_time() -> None:
    """Failing checks re-add the taint only once they have failed for the whole hold time."""
    first = _step("continuous", False, OPEN, 100.0)
    assert first.action is Action.NONE
    assert first.wake_at == 100.0 + HOLD
    early = _step("continuous", False, OPEN, 100.0 + HOLD - 0.1, first.state)
    assert early.action is Action.NONE
    due = _step("continuous", False, OPEN, 100.0 + HOLD, early.state)
    assert due.action is Action.ADD


def test_continuous_a_passing_evaluation_restarts_the_hold_clock() -> None:
    """A blip of readiness in between resets the failing clock, so short flaps never re-taint."""
    state = _step("continuous", False, OPEN, 0).state
    state = _step("continuous", True, OPEN, HOLD - 1, state).state
    again = _step("continuous", False, OPEN, HOLD + 1, state)
    assert again.action is Action.NONE
    assert again.wake_at == HOLD + 1 + HOLD


def test_continuous_readded_taint_lifts_only_after_holding_ready() -> None:
    """After a re-add the taint is lifted only once the checks passed for the hold time."""
    first = _step("continuous", True, READDED, 500.0)
    assert first.action is Action.NONE
    assert first.wake_at == 500.0 + HOLD
    dip = _step("continuous", False, READDED, 510.0, first.state)
    back = _step("continuous", True, READDED, 520.0, dip.state)
    assert back.wake_at == 520.0 + HOLD
    assert _step("continuous", True, READDED, 520.0 + HOLD, back.state).action is Action.LIFT


def test_continuous_never_changes_the_taint_twice_within_a_hold_time() -> None:
    """Simulating an oscillating pod: taint changes are at least a hold time apart."""
    state, tainted, changes = GateState(), False, []
    for tick in range(400):
        now = tick * 1.0
        ready = (tick // 7) % 2 == 0 if tick < 200 else tick < 260
        decision = _step("continuous", ready, GateView(tainted, completed=True), now, state)
        state = decision.state
        if decision.action in (Action.ADD, Action.LIFT):
            changes.append(now)
            tainted = decision.action is Action.ADD
    assert changes, "the long unready stretch must re-add the taint"
    assert all(b - a >= HOLD for a, b in itertools.pairwise(changes))


def test_a_failed_write_is_retried_without_a_new_hold_time() -> None:
    """If ADD could not be written, the next evaluation asks for ADD again at once."""
    state = _step("continuous", False, OPEN, 0).state
    due = _step("continuous", False, OPEN, HOLD, state)
    assert due.action is Action.ADD
    assert _step("continuous", False, OPEN, HOLD + 0.5, due.state).action is Action.ADD
