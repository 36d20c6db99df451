"""Printing a plan: the dry run's table, or the one JSON shape (``Plan.as_json``)."""

from __future__ import annotations

import json

from agent.columns import aligned
from agent.descheduler.plan import Plan

TABLE_HEADER = ("POD", "NODE", "PLUGIN", "REASON", "BLOCKED-BY-PDB")


def render_table(plan: Plan) -> str:
    """One row per planned eviction, in the order the cycle decided them, then a summary."""
    rows = [TABLE_HEADER] + [
        (e.pod, e.node, e.plugin, e.reason, e.blocked_by_pdb or "-") for e in plan.evictions
    ]
    summary = plan.summary()
    lines = aligned(rows)
    for change in plan.taints:
        verb = "add" if change.add else "remove"
        lines.append(
            f"{verb} taint {change.taint} on {change.node} ({change.plugin}: {change.reason})"
        )
    if plan.skipped:
        lines.append(f"cycle skipped: {plan.skipped}")
    lines.append(
        f"{summary['allowed']} pods would be evicted, "
        f"{summary['blockedByPDB']} blocked by a PodDisruptionBudget"
    )
    return "\n".join(lines) + "\n"


def render_json(plan: Plan) -> str:
    return json.dumps(plan.as_json(), indent=2) + "\n"
