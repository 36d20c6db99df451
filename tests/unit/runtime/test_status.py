"""The status board: what the controllers publish, passed on to the report's subscribers."""

from __future__ import annotations

from agent.runtime.status import BoardSnapshot, ReadinessStatus, StatusBoard


def test_board_wakes_subscribers_on_changes_only() -> None:
    """A publish of the same value again wakes nobody; a change does, with the new snapshot."""
    board = StatusBoard()
    seen: list[BoardSnapshot] = []
    board.subscribe(seen.append)
    board.publish_readiness(ReadinessStatus(True, ("pod:a",)))
    board.publish_readiness(ReadinessStatus(True, ("pod:a",)))
    board.publish_readiness(ReadinessStatus(False))
    assert [s.readiness.gate_held for s in seen if s.readiness] == [True, False]
