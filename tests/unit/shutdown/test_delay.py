"""The delay check: enough already, or not managed; the override path runs against real logind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.shutdown.delay import ensure_inhibit_delay


class FixedDelay:
    """A logind that reports a fixed InhibitDelayMaxUSec."""

    def __init__(self, usec: int) -> None:
        self.usec = usec
        self.bus: Any = None
        self.timeout = 1.0

    async def inhibit_delay_max_usec(self) -> int:
        return self.usec


async def test_sufficient_delay_changes_nothing(tmp_path: Path) -> None:
    """A delay at or above the budget writes no drop-in and reports sufficient."""
    outcome = await ensure_inhibit_delay(
        FixedDelay(30_000_000),  # type: ignore[arg-type]  # a stand-in with only what the check reads
        budget=30,
        margin=5,
        dropin_path=tmp_path / "d.conf",
        manage=True,
    )
    assert outcome.sufficient
    assert not outcome.overridden
    assert outcome.seconds == 30
    assert not (tmp_path / "d.conf").exists()


async def test_short_delay_unmanaged_is_reported_not_fixed(tmp_path: Path) -> None:
    """With manageLogindDelay off, a short delay is a problem stated, and no file is written."""
    outcome = await ensure_inhibit_delay(
        FixedDelay(5_000_000),  # type: ignore[arg-type]  # a stand-in with only what the check reads
        budget=30,
        margin=5,
        dropin_path=tmp_path / "d.conf",
        manage=False,
    )
    assert not outcome.sufficient
    assert outcome.problem is not None
    assert "manageLogindDelay is false" in outcome.problem
    assert not (tmp_path / "d.conf").exists()


async def test_unwritable_dropin_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """A drop-in that cannot be written is reported with its path and the reason."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    outcome = await ensure_inhibit_delay(
        FixedDelay(5_000_000),  # type: ignore[arg-type]  # a stand-in with only what the check reads
        budget=30,
        margin=5,
        dropin_path=blocker / "d.conf",
        manage=True,
    )
    assert not outcome.sufficient
    assert outcome.problem is not None
    assert "cannot write the logind drop-in" in outcome.problem
