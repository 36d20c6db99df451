"""The ``readiness`` command's report: each check with what it waits for, then the verdict.

Built as a plain dict (the ``--json`` output) and rendered to text from that same dict, so
the two forms cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any

from agent.config.durations import format_duration
from agent.readiness.checks import Assessment
from agent.readiness.gate import GateView
from agent.readiness.settings import GateSettings
from agent.terminaltext import render_lines

Report = dict[str, Any]


def _verdict(assessment: Assessment, view: GateView, settings: GateSettings) -> str:
    taint = settings.keys.taint
    hold = format_duration(settings.hold_time)
    continuous = settings.mode == "continuous"
    if view.tainted:
        if not assessment.ready:
            return f"NOT READY: {taint} stays on the node"
        if continuous and view.completed:
            return f"READY: the agent removes {taint} once this has held for {hold}"
        return f"READY: the agent removes {taint}"
    if assessment.ready:
        return "READY: the gate is open" if view.completed else "READY: no gate taint to remove"
    if continuous:
        return f"NOT READY: the agent adds {taint} back if this lasts {hold}"
    return "NOT READY: the gate is open and bootstrap-only mode never closes it again"


def build_report(
    node_name: str,
    assessment: Assessment,
    view: GateView,
    settings: GateSettings,
    completed_at: str | None,
) -> Report:
    return {
        "node": node_name,
        "taint": settings.keys.taint,
        "mode": settings.mode,
        "namespaces": list(settings.namespaces),
        "tainted": view.tainted,
        "bootstrapCompleted": completed_at,
        "ready": assessment.ready,
        "verdict": _verdict(assessment, view, settings),
        "checks": {
            "daemonSets": [
                {
                    "name": check.name,
                    "required": check.required,
                    "scheduled": check.scheduled,
                    "pod": check.pod or None,
                    "reason": check.reason or None,
                    "intolerant": check.intolerant,
                    "waitingForTaints": list(check.waiting_for_taints),
                }
                for check in assessment.daemon_sets
            ],
            "pods": [
                {"name": check.name, "ready": check.ready, "detail": check.detail or None}
                for check in assessment.pods
            ],
            "csiDrivers": [
                {"driver": check.driver, "registered": check.registered, "pods": list(check.pods)}
                for check in assessment.drivers
            ],
            "csiNodeFound": assessment.csinode_found,
        },
    }


def _status(ok: bool) -> str:
    return "ok" if ok else "waiting"


def _daemon_set_line(check: dict[str, Any]) -> str:
    if check["intolerant"]:
        return f"  WARN  {check['name']}: {check['reason']}"
    if not check["required"]:
        return f"  skip  {check['name']}: not expected here ({check['reason']})"
    if check["scheduled"]:
        return f"  ok    {check['name']}: pod {check['pod']}"
    line = f"  WAIT  {check['name']}: no pod on this node yet"
    if check["waitingForTaints"]:
        line += " (kept off until these taints go: " + ", ".join(check["waitingForTaints"]) + ")"
    return line


def render_text(report: Report) -> str:
    checks = report["checks"]
    state = "present" if report["tainted"] else "absent"
    lines = [f"node {report['node']}: gate taint {report['taint']} {state} (mode {report['mode']})"]
    if report["bootstrapCompleted"]:
        lines.append(f"bootstrap completed at {report['bootstrapCompleted']}")
    daemon_sets = checks["daemonSets"]
    scheduled = all(c["scheduled"] for c in daemon_sets if c["required"] and not c["intolerant"])
    lines.append(f"1. critical DaemonSets have a pod here: {_status(scheduled)}")
    lines.extend(_daemon_set_line(check) for check in daemon_sets)
    if not daemon_sets:
        lines.append("  (no critical DaemonSets in " + ", ".join(report["namespaces"]) + ")")
    pods = checks["pods"]
    lines.append(f"2. critical pods are Ready: {_status(all(p['ready'] for p in pods))}")
    lines.extend(
        f"  ok    {pod['name']}" if pod["ready"] else f"  WAIT  {pod['name']}: {pod['detail']}"
        for pod in pods
    )
    if not pods:
        lines.append("  (no critical pods on this node)")
    drivers = checks["csiDrivers"]
    lines.append(f"3. CSI drivers registered: {_status(all(d['registered'] for d in drivers))}")
    for driver in drivers:
        needed = ", ".join(driver["pods"])
        if driver["registered"]:
            lines.append(f"  ok    {driver['driver']} (for {needed})")
        else:
            where = "not in CSINode" if checks["csiNodeFound"] else "no CSINode for this node"
            lines.append(f"  WAIT  {driver['driver']}: {where} (for {needed})")
    if not drivers:
        lines.append("  (no critical pod waits for a CSI driver)")
    lines.append(f"verdict: {report['verdict']}")
    return render_lines(lines)


def render_json(report: Report) -> str:
    return json.dumps(report, indent=2) + "\n"
