"""A table a person can read: one block per section, warnings last."""

from __future__ import annotations

import json
from typing import Any

from agent.doctor.report import DoctorReport
from agent.kubesemantics.quantities import format_bytes
from agent.terminaltext import render_lines


def _cell(key: str, value: Any) -> str:
    if key.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        return f"{value} ({format_bytes(value)})" if value >= 1024 else str(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        if not value:
            return "none"
        return "; ".join(
            ", ".join(f"{k}={v}" for k, v in item.items()) if isinstance(item, dict) else str(item)
            for item in value
        )
    return str(value)


def render_table(report: DoctorReport) -> str:
    width = max(len(key) for rows in report.sections.values() for key in rows) + 2
    lines = []
    for section, rows in report.sections.items():
        lines.append(f"[{section}]")
        lines.extend(f"  {key:<{width}}{_cell(key, value)}" for key, value in rows.items())
        lines.append("")
    if report.warnings:
        lines.append("[warnings]")
        lines.extend(f"  ! {warning}" for warning in report.warnings)
    else:
        lines += ["[warnings]", "  none"]
    return render_lines(lines)


def render_json(report: DoctorReport) -> str:
    return json.dumps(report.as_json(), indent=2, sort_keys=False) + "\n"
