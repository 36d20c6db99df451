"""``shutdown plan`` output: the phase table, each phase's pods, then the pods left alone.

Pure: a plan in, text or JSON out.
"""

from __future__ import annotations

import json
from typing import Any

from agent.columns import aligned
from agent.config.durations import format_duration
from agent.shutdown.phases import Phase, PhasePlan
from agent.terminaltext import render_lines


def priority_range(phase: Phase) -> str:
    low, high = phase.min_priority, phase.max_priority
    if low is None and high is None:
        return "all"
    if low is None:
        return f"<= {high}"
    if high is None:
        return f">= {low}"
    return f"{low}..{high}"


def render_table(plan: PhasePlan, *, node: str, mode: str, note: str | None = None) -> str:
    lines = [
        f"Graceful shutdown plan for node {node}: mode {mode}, "
        f"budget {format_duration(plan.budget_seconds)} (dry run, nothing was changed)",
    ]
    if note:
        lines.append(note)
    lines.append("")
    rows = [("PHASE", "PRIORITY", "BUDGET", "DEADLINE", "PODS")]
    rows += [
        (
            str(phase.index + 1),
            priority_range(phase),
            format_duration(phase.budget_seconds),
            f"+{format_duration(phase.deadline_offset_seconds)}",
            str(len(phase.pods)),
        )
        for phase in plan.phases
    ]
    lines += aligned(rows)
    for phase in plan.phases:
        if not phase.pods:
            continue
        lines += ["", f"Phase {phase.index + 1} (priority {priority_range(phase)}):"]
        name_width = max(len(target.key) for target in phase.pods)
        lines += [
            f"  {target.key.ljust(name_width)}  priority {target.priority}"
            f"  grace {format_duration(target.grace_seconds)}"
            for target in phase.pods
        ]
    if plan.skipped:
        lines += ["", "Left alone:"]
        name_width = max(len(skipped.key) for skipped in plan.skipped)
        lines += [
            f"  {skipped.key.ljust(name_width)}  {skipped.reason}" for skipped in plan.skipped
        ]
    return render_lines(lines)


def render_json(plan: PhasePlan, *, node: str, mode: str, note: str | None = None) -> str:
    document: dict[str, Any] = {
        "node": node,
        "mode": mode,
        "budgetSeconds": plan.budget_seconds,
        "phases": [
            {
                "phase": phase.index + 1,
                "priority": phase.priority,
                "minPriority": phase.min_priority,
                "maxPriority": phase.max_priority,
                "budgetSeconds": phase.budget_seconds,
                "deadlineOffsetSeconds": phase.deadline_offset_seconds,
                "pods": [
                    {
                        "namespace": target.namespace,
                        "name": target.name,
                        "uid": target.uid,
                        "priority": target.priority,
                        "gracePeriodSeconds": target.grace_seconds,
                    }
                    for target in phase.pods
                ],
            }
            for phase in plan.phases
        ],
        "skipped": [
            {"namespace": s.namespace, "name": s.name, "reason": s.reason} for s in plan.skipped
        ],
    }
    if note:
        document["note"] = note
    return json.dumps(document, indent=2) + "\n"
