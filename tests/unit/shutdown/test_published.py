"""What the shutdown publishes for the NodeReport: its state, phase and budget."""

from __future__ import annotations

import pytest

from agent.shutdown.published import published
from agent.shutdown.record import PhaseRecord, PhaseStatus, ShutdownRecord, ShutdownStatus


def _record(status: ShutdownStatus, *phases: PhaseStatus) -> ShutdownRecord:
    return ShutdownRecord(
        start_time=100.0,
        boot_id="b",
        start_monotonic=None,
        budget_seconds=30,
        mode="delete",
        status=status,
        phases=tuple(
            PhaseRecord(
                priority=p, budget_seconds=15, deadline_offset_seconds=15 * (i + 1), status=s
            )
            for i, (p, s) in enumerate(zip((0, 1000), phases, strict=False))
        ),
    )


@pytest.mark.parametrize(
    ("record", "state", "phase"),
    [
        pytest.param(None, "none", None, id="no-record"),
        pytest.param(
            _record(ShutdownStatus.RUNNING, PhaseStatus.DONE, PhaseStatus.RUNNING),
            "inProgress",
            1000,
            id="second-phase-running",
        ),
        pytest.param(
            _record(ShutdownStatus.RUNNING, PhaseStatus.PENDING, PhaseStatus.PENDING),
            "inProgress",
            0,
            id="just-started",
        ),
        pytest.param(_record(ShutdownStatus.FINISHED), "completed", None, id="finished"),
        pytest.param(_record(ShutdownStatus.CANCELLED), "none", None, id="cancelled"),
        pytest.param(_record(ShutdownStatus.COMPLETE), "none", None, id="after-reboot"),
    ],
)
def test_shutdown_as_the_report_shows_it(
    record: ShutdownRecord | None, state: str, phase: int | None
) -> None:
    """none | inProgress (with the current phase) | completed; the budget ends at start+budget."""
    shown = published(record)
    assert (shown.state, shown.phase_priority) == (state, phase)
    if state != "none":
        assert (shown.start_time, shown.budget_end) == (100.0, 130.0)
