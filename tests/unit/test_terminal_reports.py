"""Every text report the CLI prints shows a hostile name escaped, and its ``--json`` twin
carries it exactly: the offline and dry-run plan tables, ``shutdown plan``, ``swap report``,
``doctor``, ``readiness`` and ``report``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agent.config.shutdown import PriorityBucket
from agent.descheduler.core.placement.replacements import place, with_destinations
from agent.descheduler.plan import render as plan_render
from agent.descheduler.plan.shape import Plan, PlannedEviction, TaintChange
from agent.doctor import render as doctor_render
from agent.doctor.report import DoctorReport
from agent.node.containercgroups import CgroupReading, KubepodsScan
from agent.node.kubepods import PodQOSDir
from agent.readiness import report as readiness_report
from agent.readiness.checks import assess
from agent.readiness.gate import GateView
from agent.readiness.settings import GateSettings
from agent.report import commands as report_commands
from agent.shutdown import render as shutdown_render
from agent.shutdown.phases import plan_phases
from agent.swap import render as swap_render
from agent.swap.audit import build_report
from agent.terminaltext import printable
from tests.harness import kubeobjects, readiness_objects
from tests.harness.cgroups import ContainerFixture, container_id, pod_object
from tests.harness.deschedulerstate import node, pod, snapshot
from tests.unit.swap.node_summary import V2_LIMITED_SWAP_NODE

HOSTILE = "evil\x1b[2J\x1b[31m\r\nall NodeReports believed\x00\u202etxt\u200b\x7f\x9b\\"
"""A name that clears the screen, turns it red, forges a line, hides and reverses text."""
FORGED = "all NodeReports believed"
Case = tuple[Callable[..., str], Callable[..., str], tuple[Any, ...], dict[str, Any]]
"""A report's text and JSON renderers, and the arguments both take."""
UID = "00000000-0000-0000-0000-000000000001"


def assert_shown_escaped(text: str) -> None:
    """No character a terminal would act on but the line ends; the name is there escaped,
    and its forged line never starts one."""
    assert [char for char in text if not char.isprintable() and char != "\n"] == []
    assert printable(HOSTILE) in text
    assert not any(line.lstrip().startswith(FORGED) for line in text.splitlines())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def assert_exact_json(text: str) -> None:
    """The document is printable ASCII, and parses back to the name exactly."""
    assert all(" " <= char <= "~" or char == "\n" for char in text)
    strings = _strings(json.loads(text))
    assert any(HOSTILE in each for each in strings), strings


def _plan() -> tuple[Plan, Any]:
    state = snapshot(node(HOSTILE), node("other"), pod(HOSTILE, HOSTILE, namespace="shop"))
    (victim,) = state.pods_on(HOSTILE)
    eviction = PlannedEviction(
        victim.namespace, victim.name, victim.uid, HOSTILE, "PodLifeTime", "p", HOSTILE
    )
    taint = TaintChange(
        HOSTILE, "example.com/t", HOSTILE, "NoSchedule", add=True, plugin="P", profile="p",
        reason=HOSTILE,
    )  # fmt: skip
    plan = Plan(evictions=[eviction], taints=[taint], skipped=HOSTILE)
    placed = place(state, plan.evictions)
    return with_destinations(plan, placed), placed


def _shutdown() -> Case:
    pods = [
        kubeobjects.pod(HOSTILE, namespace=HOSTILE, uid="a", priority=0, phase="Running"),
        kubeobjects.pod(
            f"{HOSTILE}-ds", uid="b", phase="Running",
            owner=kubeobjects.owner_ref("DaemonSet", HOSTILE),
        ),
    ]  # fmt: skip
    plan = plan_phases((PriorityBucket(0, 10),), pods)
    return (
        shutdown_render.render_table,
        shutdown_render.render_json,
        (plan,),
        {"node": HOSTILE, "mode": "delete", "note": HOSTILE},
    )


def _swap() -> Case:
    container = ContainerFixture(HOSTILE, container_id(1), {"memory": "1Gi"}, {"memory": "2Gi"})
    reading = CgroupReading(
        f"kubepods.slice/{HOSTILE}", PodQOSDir.BURSTABLE, UID, container_id(1), "crio", "max", 1
    )
    stray = CgroupReading(
        HOSTILE, PodQOSDir.BURSTABLE, UID[:-1] + "2", container_id(2), "crio", "max", 1
    )
    report = build_report(
        V2_LIMITED_SWAP_NODE,
        [pod_object(HOSTILE, UID, container, namespace=HOSTILE)],
        KubepodsScan(None, None, (reading, stray)),
    )
    return swap_render.render_table, swap_render.render_json, (report, [HOSTILE]), {}


def _doctor() -> Case:
    report = DoctorReport(
        sections={"cluster": {"source": f"kubeconfig /tmp/{HOSTILE}", "nodes": [HOSTILE]}},
        warnings=[HOSTILE],
    )
    return doctor_render.render_table, doctor_render.render_json, (report,), {}


def _readiness() -> Case:
    keys = readiness_objects.KEYS
    waiting = readiness_objects.pod(
        "dns", ready=False, annotations={f"{keys.csi_annotation_prefix}x": HOSTILE}
    )
    assessment = assess(
        node=readiness_objects.node(),
        keys=keys,
        namespaces=(HOSTILE,),
        pods=[waiting],
        daemon_sets=[],
        csinode=None,
    )
    report = readiness_report.build_report(
        HOSTILE, assessment, GateView(True, False), GateSettings(keys=keys), None
    )
    return readiness_report.render_text, readiness_report.render_json, (report,), {}


def _node_report() -> Case:
    status = {
        "observedTime": HOSTILE,
        "usage": {"cpu": 0.5, "cpuPercent": 12, "memory": 2**30, "memoryPercent": 6, "swap": 0},
        "capacity": {"cpu": 4, "memory": 16 * 2**30, "swap": 0},
        "pods": [
            {"namespace": HOSTILE, "name": HOSTILE, "uid": UID, "cpu": 0.1, "memory": 1, "swap": 0}
        ],
    }
    agent = {"sections": {}, "note": HOSTILE}
    return (
        report_commands.render_text,
        lambda *args: json.dumps({"node": args[0], "status": args[1]}, indent=2),
        (HOSTILE, status, agent),
        {},
    )


REPORTS = {
    "shutdown plan": _shutdown,
    "swap report": _swap,
    "doctor": _doctor,
    "readiness": _readiness,
    "report": _node_report,
}


@pytest.mark.parametrize("command", REPORTS)
def test_text_report_escapes_and_json_is_exact(command: str) -> None:
    """The table shows the hostile name escaped (no control character reaches the terminal,
    no forged line); the JSON document carries it exactly."""
    text, as_json, args, options = REPORTS[command]()
    assert_shown_escaped(text(*args, **options))
    assert_exact_json(as_json(*args, **options))


def test_offline_plan_table_escapes_pods_nodes_taints_and_json_is_exact() -> None:
    """``descheduler plan``'s tables: the pod, its node (also in the utilization table and as
    a destination), the taint line, the skip reason, all escaped; ``--output json`` exact."""
    plan, placed = _plan()
    text = plan_render.render_plan_table(plan, placed)
    assert_shown_escaped(text)
    assert f"shop/{printable(HOSTILE)}" in text
    assert_exact_json(plan_render.render_json(plan))


def test_dry_run_table_escapes() -> None:
    """The live ``--dry-run`` table (the same rows, no destinations) escapes them too."""
    plan, _ = _plan()
    assert_shown_escaped(plan_render.render_table(plan))
