"""Printing a plan: the dry run's table, the offline plan's tables (destinations, utilization
before and after as text bars), or the one JSON shape (``Plan.as_json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent.columns import aligned
from agent.descheduler.model.cluster import CPU, MEMORY, PODS
from agent.descheduler.plan.destinations import Placement, PlacementResult
from agent.descheduler.plan.shape import Plan, PlannedEviction
from agent.terminaltext import render_lines

TABLE_HEADER = ("POD", "NODE", "PLUGIN", "REASON", "BLOCKED-BY-PDB")


def blocked_cell(eviction: PlannedEviction) -> str:
    """The PDB that blocks the eviction now, or the implicit budget that holds it."""
    if eviction.implicit_budget:
        return f"implicit: {eviction.implicit_budget}"
    return eviction.blocked_by_pdb or "-"


def render_table(plan: Plan) -> str:
    """One row per planned eviction, in the order the cycle decided them, then a summary."""
    rows = [TABLE_HEADER] + [
        (e.pod, e.node, e.plugin, e.reason, blocked_cell(e)) for e in plan.evictions
    ]
    summary = plan.summary()
    lines = aligned(rows) + taint_lines(plan)
    if plan.skipped:
        lines.append(f"cycle skipped: {plan.skipped}")
    lines.append(_summary_line(summary))
    return render_lines(lines)


def _summary_line(summary: Mapping[str, Any]) -> str:
    implicit = summary["heldByImplicitBudget"]
    held = summary["held"] - implicit
    refused = summary["blockedByPDB"] - held
    line = (
        f"{summary['allowed'] - implicit} pods would be evicted at once, "
        f"{held} held by a PodDisruptionBudget (sent as it allows)"
    )
    if implicit:
        line += (
            f", {implicit} held by their workload's implicit budget "
            "(sent as replacements turn Ready)"
        )
    return line + (f", {refused} refused by one (left to the next cycle)" if refused else "")


def taint_lines(plan: Plan) -> list[str]:
    """One line per taint of ours the plan adds or removes (applied before its evictions)."""
    return [
        f"{'add' if change.add else 'remove'} taint {change.taint} on {change.node} "
        f"({change.plugin}: {change.reason})"
        for change in plan.taints
    ]


def render_json(plan: Plan) -> str:
    return json.dumps(plan.as_json(), indent=2) + "\n"


PLAN_HEADER = (*TABLE_HEADER, "DESTINATION")
UTILIZATION_HEADER = (
    "NODE",
    "CPU BEFORE -> AFTER",
    "MEMORY BEFORE -> AFTER",
    "PODS BEFORE -> AFTER",
)
BAR_WIDTH = 10


def bar(used: int, capacity: int) -> str:
    """``[####------]  40%``: requests as a share of allocatable (full past 100%)."""
    percent = used * 100 / capacity if capacity > 0 else 0.0
    filled = min(BAR_WIDTH, max(0, round(percent * BAR_WIDTH / 100)))
    return f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {percent:3.0f}%"


def _destination_cell(eviction: PlannedEviction, placement: Placement) -> str:
    cell = placement.node or "none"
    if len(placement.candidates) > 1:
        cell += f" (1 of {len(placement.candidates)} candidates)"
    if eviction.blocked_by_pdb and not eviction.held:
        return "-"
    return cell + (" once its budget allows" if eviction.held else "")


def render_plan_table(plan: Plan, placed: PlacementResult) -> str:
    """The offline plan: evictions with destinations, utilization before/after, a summary."""
    rows = [PLAN_HEADER] + [
        (e.pod, e.node, e.plugin, e.reason, blocked_cell(e), _destination_cell(e, p))
        for e, p in zip(plan.evictions, placed.placements, strict=True)
    ]
    lines = aligned(rows) + taint_lines(plan)
    nowhere = [
        (e, p)
        for e, p in zip(plan.evictions, placed.placements, strict=True)
        if p.node is None and not (e.blocked_by_pdb and not e.held)
    ]
    if nowhere:
        lines += ["", "No destination:"]
        lines += [f"  {e.pod}: {p.note}" for e, p in nowhere]
    lines += ["", "Requests per node (% of allocatable), before and after the plan:"]
    utilization = [UTILIZATION_HEADER] + [
        (
            load.node,
            *(
                f"{bar(load.before[name], load.allocatable[name])} -> "
                f"{bar(load.after[name], load.allocatable[name])}"
                for name in (CPU, MEMORY, PODS)
            ),
        )
        for load in placed.loads
    ]
    lines += aligned(utilization)
    summary = plan.summary()
    lines.append("")
    if plan.skipped:
        lines.append(f"cycle skipped: {plan.skipped}")
    lines.append(_summary_line(summary))
    if summary["byPlugin"]:
        lines.append(
            "by plugin: " + ", ".join(f"{name} {n}" for name, n in summary["byPlugin"].items())
        )
    landed = sum(1 for e in plan.evictions if e.destination is not None)
    moved = sum(
        1
        for e, p in zip(plan.evictions, placed.placements, strict=True)
        if p.node is not None and p.node != e.node
    )
    lines.append(
        f"destinations: {moved} pods would move to another node, "
        f"{landed - moved} come back where they were, {len(nowhere)} go nowhere"
    )
    return render_lines(lines)
