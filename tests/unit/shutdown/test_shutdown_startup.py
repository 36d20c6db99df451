"""The start-up decision about a shutdown found in the state file."""

from __future__ import annotations

import dataclasses

import pytest

from agent.config.shutdown import PriorityBucket
from agent.shutdown.record import ShutdownRecord, ShutdownStatus, begin_record
from agent.shutdown.startup import StartupAction, decide_on_reconnect, decide_startup


def record(status: ShutdownStatus, boot: str = "boot-a") -> ShutdownRecord:
    fresh = begin_record(
        (PriorityBucket(0, 10),), start_time=1.0, start_monotonic=1.0, boot_id=boot, mode="delete"
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
    assert decide_startup(record(status), boot, preparing) is expected


@pytest.mark.parametrize("preparing", [False, None])
def test_no_record_means_nothing_to_do(preparing: bool | None) -> None:
    """Without a state file (and logind not shutting down) there is nothing to do."""
    assert decide_startup(None, "boot-a", preparing) is StartupAction.NOTHING


@pytest.mark.parametrize(
    "record_", [None, record(ShutdownStatus.CANCELLED), record(ShutdownStatus.COMPLETE)]
)
def test_logind_already_preparing_without_an_open_shutdown_begins_one(
    record_: ShutdownRecord | None,
) -> None:
    """An agent that starts after PrepareForShutdown(true) went out starts the shutdown now."""
    assert decide_startup(record_, "boot-a", True) is StartupAction.BEGIN


def test_unknown_boot_id_is_not_taken_for_a_reboot() -> None:
    """If the boot ID cannot be read, the agent does not guess."""
    assert decide_startup(record(ShutdownStatus.RUNNING), None, True) is StartupAction.NOTHING


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
    assert decide_on_reconnect(found, "boot-a", preparing, running=running) is expected
