"""Absolute phase deadlines, computed once from the shutdown's start.

kubelet restarts each phase's clock when the phase begins, so a phase that starts late
pushes every later one back and the total can overrun logind's delay. We fix every
deadline at the start instead: phase *i* must be over by ``start + sum(budget[0..i])``.
A phase that ends early hands its unused time to the next one; a late one never stretches
the total. The same arithmetic resumes a shutdown after an agent restart.

Pure: numbers in, numbers out. Times are whatever clock the caller uses (monotonic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate


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


def deadlines_from(start: float, budgets: Sequence[int]) -> Deadlines:
    """Phase deadlines as ``start`` plus the cumulative budgets."""
    return Deadlines(start=start, phase_ends=tuple(start + total for total in accumulate(budgets)))
