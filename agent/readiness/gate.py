"""When to lift, re-add or leave the gate taint: a pure state machine driven by timestamps.

Inputs are the checks' verdict, what the Node shows (taint present? bootstrap completed?)
and a monotonic ``now``; the output is one action, the next state, and when to look again
even if no event arrives (a hold timer, never a polling loop).

bootstrap-only (the default):
- taint present and the checks pass: lift it (and record bootstrap completion);
- the taint is never added. A node that registered without it is only marked completed
  once the checks pass, so a restarted agent knows there is nothing left to do;
- once completed, nothing is done again, except that a gate taint found on a completed node
  (left by continuous mode, or put back by hand) is still lifted when the checks pass: an
  orphaned gate would keep workloads off the node for good.

continuous (opt-in), with hysteresis so the taint cannot flap:
- the first lift (bootstrap not completed yet) happens as soon as the checks pass;
- the taint is re-added only after the checks have failed *continuously* for ``holdTime``;
  any passing evaluation in between restarts that clock;
- a re-added taint (bootstrap completed, taint present) is lifted only after the checks have
  passed continuously for ``holdTime``;
- so at most one taint change happens per ``holdTime``, however a pod oscillates.

The clocks are not reset by an action: if the write fails, the next evaluation retries at
once instead of waiting out another hold time; once the write shows on the Node, the other
branch applies and the verdict's next change restarts the clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

Mode = Literal["bootstrap-only", "continuous"]


class Action(enum.Enum):
    NONE = "none"
    LIFT = "lift"
    """Remove the gate taint (and record bootstrap completion if not recorded yet)."""
    MARK_COMPLETED = "mark-completed"
    """Record bootstrap completion on a node that never carried the taint."""
    ADD = "add"
    """Put the gate taint back (continuous mode only)."""


@dataclass(frozen=True)
class GateView:
    """What the Node shows."""

    tainted: bool
    completed: bool


@dataclass(frozen=True)
class GateState:
    """Memory between evaluations: when the current unbroken run of verdicts began."""

    failing_since: float | None = None
    passing_since: float | None = None


@dataclass(frozen=True)
class Decision:
    action: Action
    state: GateState
    wake_at: float | None = None
    """Monotonic time to evaluate again even without events (a hold timer)."""
    why: str = ""


def _track(state: GateState, ready: bool, now: float) -> GateState:
    if ready:
        since = now if state.passing_since is None else state.passing_since
        return GateState(failing_since=None, passing_since=since)
    since = now if state.failing_since is None else state.failing_since
    return GateState(failing_since=since, passing_since=None)


def decide(
    *,
    mode: Mode,
    hold_time: float,
    ready: bool,
    view: GateView,
    state: GateState,
    now: float,
) -> Decision:
    """The one step of the gate: what to do now, given the verdict and what the node shows."""
    state = _track(state, ready, now)
    if mode == "bootstrap-only":
        return _bootstrap_only(ready, view, state)
    return _continuous(hold_time, ready, view, state, now)


def _bootstrap_only(ready: bool, view: GateView, state: GateState) -> Decision:
    if view.tainted:
        if ready:
            return Decision(Action.LIFT, state, why="critical components are ready")
        return Decision(Action.NONE, state, why="holding: critical components are not ready")
    if view.completed:
        return Decision(Action.NONE, state, why="bootstrap completed")
    if ready:
        return Decision(
            Action.MARK_COMPLETED, state, why="ready; the node never carried the gate taint"
        )
    return Decision(Action.NONE, state, why="not ready, but the node carries no gate taint to hold")


def _continuous(  # noqa: PLR0911 - one exit per row of the rule table in the docstring
    hold_time: float, ready: bool, view: GateView, state: GateState, now: float
) -> Decision:
    if view.tainted:
        if not ready:
            return Decision(Action.NONE, state, why="holding: critical components are not ready")
        if not view.completed:
            return Decision(Action.LIFT, state, why="critical components are ready")
        assert state.passing_since is not None  # noqa: S101 - _track set it for ready
        due = state.passing_since + hold_time
        if now >= due:
            return Decision(Action.LIFT, state, why="ready for the hold time")
        return Decision(Action.NONE, state, wake_at=due, why="ready; waiting out the hold time")
    if ready:
        if not view.completed:
            return Decision(
                Action.MARK_COMPLETED, state, why="ready; the node never carried the gate taint"
            )
        return Decision(Action.NONE, state, why="open: critical components are ready")
    assert state.failing_since is not None  # noqa: S101 - _track set it for not ready
    due = state.failing_since + hold_time
    if now >= due:
        return Decision(Action.ADD, state, why="not ready for the hold time")
    return Decision(Action.NONE, state, wake_at=due, why="not ready; waiting out the hold time")
