"""The report record file: the board sections round-trip; a file not ours is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.node.reportrecord import ReportRecord, load_report_record, save_report_record


def test_sections_and_their_time_round_trip(tmp_path: Path) -> None:
    """What the agent saves (write facts, board sections, their time) is what a reader gets."""
    record = ReportRecord(
        last_written=10.0,
        size_bytes=99,
        sections={"shutdown": {"state": "none"}, "readiness": {"gateHeld": False}},
        sections_time=12.5,
    )
    save_report_record(tmp_path / "record.json", record)
    assert load_report_record(tmp_path / "record.json") == record


def test_a_record_from_before_sections_reads_without_them(tmp_path: Path) -> None:
    """An older agent's record (no sections) loads, with no sections and no time."""
    (tmp_path / "record.json").write_text(json.dumps({"last_written": 1.0, "errors": 0}))
    record = load_report_record(tmp_path / "record.json")
    assert record == ReportRecord(last_written=1.0)


@pytest.mark.parametrize(
    ("document", "field"),
    [
        pytest.param({"sections": ["shutdown"]}, "sections", id="sections-not-an-object"),
        pytest.param({"sections": {"shutdown": "none"}}, "sections", id="section-not-an-object"),
        pytest.param({"sections": {}, "sections_time": "soon"}, "sections_time", id="bad-time"),
        pytest.param({"sections": {}, "sections_time": True}, "sections_time", id="bool-time"),
    ],
)
def test_bad_sections_are_refused_naming_the_field(
    tmp_path: Path, document: dict[str, object], field: str
) -> None:
    """A record whose sections or time have the wrong shape is a ValueError naming the field."""
    (tmp_path / "record.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=f"{field}:"):
        load_report_record(tmp_path / "record.json")
