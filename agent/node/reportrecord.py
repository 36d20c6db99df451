"""The last-write facts of the NodeReport, kept in a small state file for ``doctor``.

The agent writes it (atomically) after each write attempt; ``doctor`` runs as a separate
process and reads it, so the two share no memory and need no API call to show when the
report was last written, how big it was, and what went wrong since.
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
    try:
        return ReportRecord(
            last_written=document.get("last_written"),
            size_bytes=document.get("size_bytes"),
            errors=int(document.get("errors") or 0),
            last_error=str(document.get("last_error") or ""),
        )
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
