"""The last-write facts of the NodeReport, kept in a small state file for ``doctor`` and ``report``.

The agent writes it (atomically) after each write attempt; ``doctor`` and ``report`` run as
separate processes and read it, so they share no memory with the agent and need no API call
to show when the report was last written, how big it was, and what went wrong since.

It also carries the sections that come from the agent's other capabilities (readiness gate,
shutdown, swap) as the agent last published them, in the NodeReport's own JSON form: the
one-shot ``report`` command cannot compute those itself, and shows these with their age.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.node.statefile import StateFileUnreadable, read_json, write_json_atomic


@dataclass(frozen=True)
class ReportRecord:
    last_written: float | None = None
    """Unix seconds of the last successful write."""
    size_bytes: int | None = None
    """Bytes of the last status patch sent."""
    errors: int = 0
    """Failed writes since the last success."""
    last_error: str = ""
    sections: dict[str, Any] | None = None
    """``readiness``, ``shutdown`` and ``swap`` as the NodeReport status carries them, from
    the agent's status board when the record was saved (a section nobody published is
    absent); ``None`` when no agent has saved them."""
    sections_time: float | None = None
    """Unix seconds when ``sections`` were saved."""


def save_report_record(path: Path, record: ReportRecord) -> None:
    write_json_atomic(path, asdict(record))


def load_report_record(path: Path) -> ReportRecord | None:
    """The record, ``None`` without a file; ``ValueError`` when it is not ours."""
    try:
        document: Any = read_json(path)
    except StateFileUnreadable as error:
        raise ValueError(str(error)) from None
    if document is None:
        return None
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a report record")  # noqa: TRY004 - bad file content, not a caller's type error
    sections = document.get("sections")
    if sections is not None and not (
        isinstance(sections, dict) and all(isinstance(value, dict) for value in sections.values())
    ):
        raise ValueError(f"{path}: sections: not an object of objects")
    sections_time = document.get("sections_time")
    if sections_time is not None and (
        isinstance(sections_time, bool) or not isinstance(sections_time, int | float)
    ):
        raise ValueError(f"{path}: sections_time: not a number")
    try:
        return ReportRecord(
            last_written=document.get("last_written"),
            size_bytes=document.get("size_bytes"),
            errors=int(document.get("errors") or 0),
            last_error=str(document.get("last_error") or ""),
            sections=sections,
            sections_time=None if sections_time is None else float(sections_time),
        )
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
