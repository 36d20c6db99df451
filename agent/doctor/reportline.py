"""``doctor``'s NodeReport line: when the agent last wrote it, how big it was, what failed.

Read from the agent's small state file (``report.stateFile``), so doctor needs neither the
running agent nor the API server to answer.
"""

from __future__ import annotations

from typing import Any

from agent.config import AgentConfig
from agent.kubesemantics.timestamps import rfc3339
from agent.node.reportrecord import load_report_record


def report_section(config: AgentConfig) -> tuple[dict[str, Any], list[str]]:
    """Rows for the ``report`` section, and warnings."""
    path = config.report_state_file
    if not config.report.enabled:
        return {"enabled": False}, []
    try:
        record = load_report_record(path)
    except (OSError, ValueError) as error:
        return {"enabled": True, "state_file": str(path)}, [f"report state unreadable: {error}"]
    if record is None:
        return {"enabled": True, "last_written": None, "state_file": str(path)}, []
    rows: dict[str, Any] = {
        "enabled": True,
        "last_written": rfc3339(record.last_written) if record.last_written else None,
        "size_bytes": record.size_bytes,
        "errors": record.errors,
        "last_error": record.last_error or None,
    }
    warnings = []
    if record.errors:
        warnings.append(f"the last {record.errors} NodeReport write(s) failed: {record.last_error}")
    return rows, warnings
