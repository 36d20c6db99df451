"""The ``report`` config section, the status board, and what the shutdown publishes."""

from __future__ import annotations

import pytest

from agent.config import AgentConfig, ConfigError, parse_document
from agent.runtime.status import BoardSnapshot, ReadinessStatus, StatusBoard
from agent.shutdown.published import published
from agent.shutdown.record import PhaseRecord, PhaseStatus, ShutdownRecord, ShutdownStatus


def test_report_defaults() -> None:
    """5 s samples, weight 0.1, 5 points, 60 s heartbeat: the issue's defaults."""
    config = parse_document(AgentConfig, "", "empty.yaml").report
    assert (config.sample_interval, config.smoothing) == (5.0, 0.1)
    assert (config.threshold_percent, config.heartbeat) == (5.0, 60.0)


def test_every_bad_report_field_is_named_with_its_path() -> None:
    """Bad values are all reported at once, each with its full path."""
    text = "report:\n  sampleInterval: 5\n  smoothing: 2\n  thresholdPercent: -1\n  bogus: 1\n"
    with pytest.raises(ConfigError) as caught:
        parse_document(AgentConfig, text, "agent.yaml")
    message = str(caught.value)
    for path in ("report.sampleInterval", "report.smoothing", "report.thresholdPercent"):
        assert path in message
    assert "report.bogus: unknown field" in message


def test_heartbeat_shorter_than_the_sample_interval_is_refused() -> None:
    """A heartbeat must not be shorter than the sampling interval it is checked on."""
    with pytest.raises(ConfigError, match=r"report\.heartbeat"):
        parse_document(AgentConfig, "report: {sampleInterval: 30s, heartbeat: 10s}", "a.yaml")


def test_board_wakes_subscribers_on_changes_only() -> None:
    """A publish of the same value again wakes nobody; a change does, with the new snapshot."""
    board = StatusBoard()
    seen: list[BoardSnapshot] = []
    board.subscribe(seen.append)
    board.publish_readiness(ReadinessStatus(True, ("pod:a",)))
    board.publish_readiness(ReadinessStatus(True, ("pod:a",)))
    board.publish_readiness(ReadinessStatus(False))
    assert [s.readiness.gate_held for s in seen if s.readiness] == [True, False]


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
