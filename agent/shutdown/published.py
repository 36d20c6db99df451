"""The shutdown as the NodeReport shows it: ``none | inProgress | completed`` (pure).

``completed`` means the phases are over and the node is expected to go down; a cancelled
shutdown, or one closed after the reboot, is ``none`` again.
"""

from __future__ import annotations

from agent.runtime.status import ShutdownStatus as PublishedShutdown
from agent.shutdown.record import PhaseStatus, ShutdownRecord, ShutdownStatus


def published(record: ShutdownRecord | None) -> PublishedShutdown:
    if record is None or record.status in (ShutdownStatus.CANCELLED, ShutdownStatus.COMPLETE):
        return PublishedShutdown()
    budget_end = record.start_time + record.budget_seconds
    if record.status is ShutdownStatus.FINISHED:
        return PublishedShutdown("completed", record.start_time, None, budget_end)
    current = next(
        (
            phase.priority
            for wanted in (PhaseStatus.RUNNING, PhaseStatus.PENDING)
            for phase in record.phases
            if phase.status is wanted
        ),
        None,
    )
    return PublishedShutdown("inProgress", record.start_time, current, budget_end)
