"""The state file's model: kubelet's two keys plus ours, round-tripped, bad input named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.config.shutdown import PriorityBucket
from agent.shutdown.record import (
    PhaseStatus,
    ShutdownRecord,
    ShutdownStatus,
    StateFileError,
    begin_record,
)

BUCKETS = (
    PriorityBucket(priority=1000, shutdown_grace_period_seconds=20),
    PriorityBucket(priority=0, shutdown_grace_period_seconds=10),
)


def record() -> ShutdownRecord:
    return begin_record(
        BUCKETS, start_time=1_700_000_000.25, start_monotonic=42.5, boot_id="b1", mode="delete"
    )


def test_begin_record_has_one_pending_phase_per_bucket_ascending() -> None:
    """A new record is running, with pending phases sorted by priority and cumulative offsets."""
    fresh = record()
    assert fresh.status is ShutdownStatus.RUNNING
    assert [(p.priority, p.budget_seconds, p.deadline_offset_seconds) for p in fresh.phases] == [
        (0, 10, 10),
        (1000, 20, 30),
    ]
    assert {p.status for p in fresh.phases} == {PhaseStatus.PENDING}
    assert fresh.budget_seconds == 30


def test_json_keeps_kubelets_keys_and_round_trips() -> None:
    """startTime/endTime are RFC 3339 like kubelet's file; everything survives a round trip."""
    done = (
        record()
        .with_phase(0, status=PhaseStatus.DONE, pods=2, terminated=2, start_time=1.0, end_time=3.5)
        .closed(ShutdownStatus.FINISHED, end_time=1_700_000_031.0, why="phases-done")
    )
    document = json.loads(json.dumps(done.to_json()))
    assert document["startTime"] == "2023-11-14T22:13:20.250000Z"
    assert document["endTime"] == "2023-11-14T22:13:51.000000Z"
    assert document["bootID"] == "b1"
    assert ShutdownRecord.from_json(document) == done


def test_closing_marks_open_phases_and_keeps_the_first_reason() -> None:
    """Closing a record times out its open phases; a later close keeps the first release reason."""
    finished = record().closed(ShutdownStatus.FINISHED, end_time=5.0, why="budget")
    assert [p.status for p in finished.phases] == [PhaseStatus.TIMED_OUT] * 2
    cancelled = finished.closed(ShutdownStatus.CANCELLED, end_time=None, why="cancelled")
    assert cancelled.released_by == "budget"
    assert cancelled.end_time == 5.0


def test_cancelling_a_running_record_marks_its_open_phases_cancelled() -> None:
    """A cancellation mid-shutdown leaves the finished phases alone and cancels the rest."""
    running = record().with_phase(0, status=PhaseStatus.DONE)
    cancelled = running.closed(ShutdownStatus.CANCELLED, end_time=9.0, why="cancelled")
    assert [p.status for p in cancelled.phases] == [PhaseStatus.DONE, PhaseStatus.CANCELLED]


def _mutated(**changes: Any) -> dict[str, Any]:
    document = record().to_json()
    document.update(changes)
    return document


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "the document must be a JSON object"),
        (_mutated(startTime="yesterday"), "startTime: Invalid isoformat string"),
        (_mutated(startTime="2024-01-02T03:04:05"), "startTime: timestamp"),
        (_mutated(bootID=7), "bootID: must be a str"),
        (_mutated(status="sleeping"), "status: must be one of running, finished"),
        (_mutated(budgetSeconds=True), "budgetSeconds: must be a int"),
        (_mutated(phases=[{"priority": 0}]), "phases[0].budgetSeconds: missing"),
        (_mutated(phases=[7]), "phases[0]: must be a JSON object"),
    ],
)
def test_bad_documents_name_the_field(document: Any, message: str) -> None:
    """A document we did not write is rejected with the offending field's path."""
    with pytest.raises(StateFileError) as caught:
        ShutdownRecord.from_json(document)
    assert message in str(caught.value)


def test_missing_start_monotonic_is_accepted() -> None:
    """startMonotonic is optional (the wall clock stands in for it)."""
    document = record().to_json()
    del document["startMonotonic"]
    assert ShutdownRecord.from_json(document).start_monotonic is None
