"""The start-up decision about a shutdown found in the state file."""

from __future__ import annotations

import dataclasses

import pytest

from agent.config.shutdown import PriorityBucket
from agent.shutdown.record import ShutdownRecord, ShutdownStatus, begin_record
from agent.shutdown.startup import (
    STALE_AFTER_SECONDS,
    StartupAction,
    decide_on_reconnect,
    decide_startup,
    is_current,
)

START = 1_000.0
"""The records' start (Unix seconds); their budget is 10 s."""
SOON = START + 5
"""A moment inside the record's budget."""
LONG_AFTER = START + 10 + STALE_AFTER_SECONDS
"""The first moment the record's budget counts as long over."""


def record(status: ShutdownStatus, boot: str = "boot-a") -> ShutdownRecord:
    fresh = begin_record(
        (PriorityBucket(0, 10),),
        start_time=START,
        start_monotonic=1.0,
        boot_id=boot,
        mode="delete",
    )
    return dataclasses.replace(fresh, status=status)


@pytest.mark.parametrize(
    ("status", "boot", "preparing", "expected"),
    [
        (ShutdownStatus.RUNNING, "boot-a", True, StartupAction.RESUME),
        (
            ShutdownStatus.RUNNING,
            "boot-a",
            None,
            StartupAction.RESUME,
        ),  # logind unknown: trust the file
        (ShutdownStatus.RUNNING, "boot-a", False, StartupAction.CLEAR_CANCELLED),
        (ShutdownStatus.FINISHED, "boot-a", True, StartupAction.NOTHING),
        (ShutdownStatus.FINISHED, "boot-a", None, StartupAction.NOTHING),
        (ShutdownStatus.FINISHED, "boot-a", False, StartupAction.CLEAR_CANCELLED),
        (ShutdownStatus.RUNNING, "boot-b", True, StartupAction.CLEAR_AFTER_REBOOT),
        (ShutdownStatus.FINISHED, "boot-b", None, StartupAction.CLEAR_AFTER_REBOOT),
        (ShutdownStatus.CANCELLED, "boot-b", None, StartupAction.NOTHING),
        (ShutdownStatus.COMPLETE, "boot-b", None, StartupAction.NOTHING),
        (ShutdownStatus.COMPLETE, "boot-a", False, StartupAction.NOTHING),
    ],
)
def test_decision_table(
    status: ShutdownStatus, boot: str, preparing: bool | None, expected: StartupAction
) -> None:
    """Same boot resumes, another boot clears, a missed cancellation clears, closed ones rest."""
    assert decide_startup(record(status), boot, preparing, now=SOON) is expected


@pytest.mark.parametrize("preparing", [False, None])
def test_no_record_means_nothing_to_do(preparing: bool | None) -> None:
    """Without a state file (and logind not shutting down) there is nothing to do."""
    assert decide_startup(None, "boot-a", preparing, now=SOON) is StartupAction.NOTHING


@pytest.mark.parametrize(
    "record_", [None, record(ShutdownStatus.CANCELLED), record(ShutdownStatus.COMPLETE)]
)
def test_logind_already_preparing_without_an_open_shutdown_begins_one(
    record_: ShutdownRecord | None,
) -> None:
    """An agent that starts after PrepareForShutdown(true) went out starts the shutdown now."""
    assert decide_startup(record_, "boot-a", True, now=SOON) is StartupAction.BEGIN


@pytest.mark.parametrize(
    ("status", "preparing", "now", "expected"),
    [
        pytest.param(
            ShutdownStatus.RUNNING, None, LONG_AFTER, StartupAction.CLEAR_AFTER_REBOOT, id="stale"
        ),
        pytest.param(
            ShutdownStatus.FINISHED,
            False,
            LONG_AFTER,
            StartupAction.CLEAR_AFTER_REBOOT,
            id="stale-finished",
        ),
        pytest.param(
            ShutdownStatus.FINISHED, True, LONG_AFTER, StartupAction.BEGIN, id="stale-new-shutdown"
        ),
        pytest.param(
            ShutdownStatus.RUNNING,
            None,
            LONG_AFTER - 1,
            StartupAction.NOTHING,
            id="recent-logind-silent-no-guess",
        ),
        pytest.param(
            ShutdownStatus.RUNNING, True, SOON, StartupAction.RESUME, id="recent-logind-preparing"
        ),
        pytest.param(
            ShutdownStatus.FINISHED, True, SOON, StartupAction.NOTHING, id="recent-finished"
        ),
        pytest.param(
            ShutdownStatus.RUNNING,
            False,
            SOON,
            StartupAction.CLEAR_CANCELLED,
            id="recent-logind-not-preparing",
        ),
    ],
)
def test_unknown_boot_id_is_judged_by_the_records_age_and_logind(
    status: ShutdownStatus, preparing: bool | None, now: float, expected: StartupAction
) -> None:
    """With no boot ID, a long-ended record is cleared and a recent one follows logind."""
    assert decide_startup(record(status), None, preparing, now=now) is expected


def test_a_record_written_without_a_boot_id_is_judged_the_same_way() -> None:
    """A record whose boot ID was unknown when written is not taken for another boot's."""
    found = record(ShutdownStatus.RUNNING, boot="")
    assert decide_startup(found, "boot-a", True, now=SOON) is StartupAction.RESUME
    assert decide_startup(found, "boot-a", None, now=LONG_AFTER) is (
        StartupAction.CLEAR_AFTER_REBOOT
    )


@pytest.mark.parametrize(
    ("now", "expected"),
    [pytest.param(SOON, True, id="recent"), pytest.param(LONG_AFTER, False, id="long-over")],
)
def test_with_no_boot_id_a_recent_record_is_the_current_shutdown(
    now: float, expected: bool
) -> None:
    """A cancellation undoes a record of unknown boot unless its budget is long over."""
    assert is_current(record(ShutdownStatus.FINISHED), None, now=now) is expected


@pytest.mark.parametrize(
    ("found", "preparing", "running", "expected"),
    [
        (None, True, False, StartupAction.BEGIN),  # the signal went out while we were away
        (record(ShutdownStatus.CANCELLED), True, False, StartupAction.BEGIN),
        (record(ShutdownStatus.COMPLETE), True, False, StartupAction.BEGIN),
        (record(ShutdownStatus.RUNNING, "boot-old"), True, False, StartupAction.BEGIN),
        (record(ShutdownStatus.RUNNING), True, True, StartupAction.NOTHING),  # heard it
        (record(ShutdownStatus.FINISHED), True, False, StartupAction.NOTHING),  # done already
        (record(ShutdownStatus.RUNNING), False, True, StartupAction.CLEAR_CANCELLED),
        (record(ShutdownStatus.FINISHED), False, False, StartupAction.CLEAR_CANCELLED),
        (None, False, False, StartupAction.NOTHING),
        (record(ShutdownStatus.RUNNING), None, True, StartupAction.NOTHING),  # cannot ask
        (None, None, False, StartupAction.NOTHING),
    ],
)
def test_reconnect_reads_back_a_missed_prepare_for_shutdown(
    found: ShutdownRecord | None, preparing: bool | None, running: bool, expected: StartupAction
) -> None:
    """Back on the bus, a shutdown logind prepares (or called off) meanwhile is acted on."""
    assert decide_on_reconnect(found, "boot-a", preparing, running=running, now=SOON) is expected


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param(SOON, StartupAction.NOTHING, id="recent-finished-is-ours"),
        pytest.param(LONG_AFTER, StartupAction.BEGIN, id="long-over-a-new-shutdown"),
    ],
)
def test_reconnect_with_an_unknown_boot_id_judges_the_record_by_its_age(
    now: float, expected: StartupAction
) -> None:
    """Back on the bus with no boot ID: logind preparing is ours only if our record is recent."""
    found = record(ShutdownStatus.FINISHED)
    assert decide_on_reconnect(found, None, True, running=False, now=now) is expected
