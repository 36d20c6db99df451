"""Absolute phase deadlines, computed once from the shutdown's start.

kubelet restarts each phase's clock when the phase begins, so a phase that starts late
pushes every later one back and the total can overrun logind's delay. We fix every deadline
at the start instead: phase *i* must be over by ``start`` plus its deadline offset, the
seconds of phase *i* and of every phase before it (summed once, by
``agent.config.shutdown.phase_windows``; the record keeps them). A phase that ends early
hands its unused time to the next one; a late one never stretches the total. The same
offsets resume a shutdown after an agent restart.

The first delete of a shutdown waits for the shutting-down taint to be stored, but only
briefly: ``TAINT_WAIT_SECONDS`` at most, and never more than ``TAINT_WAIT_SHARE`` of the time
left until the next phase deadline, so an API server that is slow or refuses the patch costs
the pods a small, known part of their phase, never the budget.

Pure: numbers in, numbers out. Times are whatever clock the caller uses (monotonic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.shutdown.phases import Timed

TAINT_WAIT_SECONDS = 2.0
"""The longest the first delete of a shutdown waits for the taint to be stored."""
TAINT_WAIT_SHARE = 0.1
"""The largest part of the time left until the next phase deadline the taint may take."""


@dataclass(frozen=True)
class Deadlines:
    start: float
    phase_ends: tuple[float, ...]

    @property
    def budget_end(self) -> float:
        """When the lock must be released at the latest."""
        return self.phase_ends[-1] if self.phase_ends else self.start

    def remaining(self, now: float) -> float:
        return max(0.0, self.budget_end - now)

    def taint_wait_end(self, now: float) -> float:
        """Until when the first pod request may wait for the taint: a short while, and a
        small share of the time left until the next phase deadline still ahead (a 0 s
        bucket, or one a resumed run finds already past, has its pods told to stop at
        once, and the phase after it would pay for the wait)."""
        left = next((end - now for end in self.phase_ends if end > now), 0.0)
        return now + min(TAINT_WAIT_SECONDS, TAINT_WAIT_SHARE * left)


def deadlines_from(start: float, phases: Sequence[Timed]) -> Deadlines:
    """The deadlines of ``phases`` (in running order): ``start`` plus each one's offset."""
    return Deadlines(
        start=start, phase_ends=tuple(start + phase.deadline_offset_seconds for phase in phases)
    )
