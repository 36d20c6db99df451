"""What to do at start with the shutdown we find in the state file.

kubelet forgets a shutdown when it restarts mid-way (kubernetes#122674): it admits pods
again on a node that is going down. We remember. The boot ID tells the two stories apart:

- **same boot, still running**: the agent restarted mid-shutdown; carry on with the
  remaining phases inside the original deadlines, and keep the taint;
- **another boot**: the node went down and came back; the taint must go, and the record
  is marked complete (its times still feed the metrics);
- **same boot, and logind says no shutdown is under way**: it was called off while we
  were down (the PrepareForShutdown(false) went unheard), so undo it like a cancellation.
  When logind cannot be asked, we trust the file;
- **nothing on record, but logind is already preparing for shutdown**: the signal went out
  before we listened (the agent started late); start the shutdown now.

The boot ID may be unknown (``/proc`` unreadable at start, or a record written while it
was). Doing nothing then would leave the shutting-down taint on a rebooted node for good,
so the record's own times decide: once its budget has long ended (``STALE_AFTER_SECONDS``
past it, far longer than any shutdown takes after the lock goes) it is cleared as after a
reboot, unless logind prepares a shutdown right now, which is then a new one. Inside that
window we act only on what logind confirms: it prepares a shutdown (resume ours), or it
does not (clear ours). With logind silent too, we wait: a guess could delete pods on a
node that has just come back.

The agent is just as deaf while its bus connection is down, or while logind restarts, so
``decide_on_reconnect`` asks the same question each time logind is back within earshot: a
``PrepareForShutdown`` sent meanwhile is read back from ``PreparingForShutdown``.

Pure: a record, two facts, one decision.
"""

from __future__ import annotations

from enum import Enum

from agent.shutdown.record import ShutdownRecord, ShutdownStatus


class StartupAction(Enum):
    NOTHING = "nothing"
    RESUME = "resume"
    """Same boot, shutdown unfinished: resume inside the original deadlines."""
    CLEAR_AFTER_REBOOT = "clear-after-reboot"
    """Another boot: remove the taint, mark the record complete."""
    CLEAR_CANCELLED = "clear-cancelled"
    """Same boot, logind is not shutting down: the shutdown was cancelled while we were away."""
    BEGIN = "begin"
    """logind is already preparing for shutdown and no shutdown of ours is on record: the
    PrepareForShutdown(true) went out before we listened, so start one now."""


ACTIVE = frozenset({ShutdownStatus.RUNNING, ShutdownStatus.FINISHED})
STALE_AFTER_SECONDS = 600.0
"""How long after its budget's end a record of unknown boot is taken for a finished story."""


def decide_startup(
    record: ShutdownRecord | None, boot_id: str | None, preparing: bool | None, *, now: float
) -> StartupAction:
    """``preparing`` is logind's ``PreparingForShutdown`` (``None``: logind could not be asked);
    ``boot_id`` is ``None`` when it cannot be read; ``now`` is Unix seconds."""
    if record is None or record.status not in ACTIVE:
        return StartupAction.BEGIN if preparing else StartupAction.NOTHING
    if not boot_id or not record.boot_id:
        return _decide_without_boot_id(record, preparing, now=now)
    if record.boot_id != boot_id:
        return StartupAction.CLEAR_AFTER_REBOOT
    if preparing is False:
        return StartupAction.CLEAR_CANCELLED
    if record.status is ShutdownStatus.RUNNING:
        return StartupAction.RESUME
    return StartupAction.NOTHING


def _decide_without_boot_id(
    record: ShutdownRecord, preparing: bool | None, *, now: float
) -> StartupAction:
    """Which boot the record is from is unknown: its age and logind decide."""
    if _long_over(record, now):
        return StartupAction.BEGIN if preparing else StartupAction.CLEAR_AFTER_REBOOT
    if preparing is False:
        return StartupAction.CLEAR_CANCELLED
    if preparing and record.status is ShutdownStatus.RUNNING:
        return StartupAction.RESUME
    return StartupAction.NOTHING


def _long_over(record: ShutdownRecord, now: float) -> bool:
    return now >= record.start_time + record.budget_seconds + STALE_AFTER_SECONDS


def decide_on_reconnect(
    record: ShutdownRecord | None,
    boot_id: str | None,
    preparing: bool | None,
    *,
    running: bool,
    now: float,
) -> StartupAction:
    """logind is back on the bus; did we miss a ``PrepareForShutdown`` while it was not?

    ``running``: a shutdown run is under way. Only two answers are possible: BEGIN (logind
    prepares for a shutdown we know nothing of) and CLEAR_CANCELLED (ours was called off).
    A shutdown of ours that already finished while logind still prepares is left alone.
    """
    if preparing is None:
        return StartupAction.NOTHING
    ours = running or is_current(record, boot_id, now=now)
    if preparing and not ours:
        return StartupAction.BEGIN
    if not preparing and ours:
        return StartupAction.CLEAR_CANCELLED
    return StartupAction.NOTHING


def is_current(record: ShutdownRecord | None, boot_id: str | None, *, now: float) -> bool:
    """A shutdown of this boot that runs or ran: the one a cancellation would undo.

    With the boot unknown (on either side), a record whose budget has not long ended counts.
    """
    if record is None or record.status not in ACTIVE:
        return False
    if not boot_id or not record.boot_id:
        return not _long_over(record, now)
    return record.boot_id == boot_id
