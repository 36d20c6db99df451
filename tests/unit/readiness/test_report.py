"""The ``readiness`` command's report: each check, what it waits for, then the verdict."""

from __future__ import annotations

import json

from agent.readiness.checks import assess
from agent.readiness.gate import GateView
from agent.readiness.presets import PRESETS
from agent.readiness.report import build_report, render_json, render_text
from agent.readiness.settings import GateSettings
from tests.harness.kubeobjects import controller_ref
from tests.harness.readiness_objects import KEYS, csinode, daemon_set, node, pod

SETTINGS = GateSettings(keys=PRESETS["default"])


def _report(tainted: bool = True, completed: bool = False, **kwargs: object) -> dict[str, object]:
    assessment = assess(
        node=node(),
        keys=KEYS,
        namespaces=("kube-system",),
        pods=kwargs.get("pods", []),  # type: ignore[arg-type]  # test-only loose kwargs
        daemon_sets=kwargs.get("daemon_sets", []),  # type: ignore[arg-type]
        csinode=kwargs.get("csinode"),  # type: ignore[arg-type]
    )
    return build_report("node-1", assessment, GateView(tainted, completed), SETTINGS, None)


def test_text_lists_each_check_with_what_it_waits_for() -> None:
    """Unscheduled DaemonSets, unready pods and missing drivers each appear with details."""
    text = render_text(
        _report(
            daemon_sets=[
                daemon_set("cni"),
                daemon_set("gpu", node_selector={"pool": "gpu"}),
                daemon_set("picky", tolerations=[]),
            ],
            pods=[pod("dns", ready=False, annotations={f"{KEYS.csi_annotation_prefix}x": "d"})],
        )
    )
    assert "1. critical DaemonSets have a pod here: waiting" in text
    assert "WAIT  kube-system/cni: no pod on this node yet" in text
    assert "skip  kube-system/gpu: not expected here (nodeSelector pool=gpu" in text
    assert "WARN  kube-system/picky: does not tolerate the gate taint" in text
    assert "WAIT  kube-system/dns: ContainersNotReady" in text
    assert "WAIT  d: no CSINode for this node (for kube-system/dns)" in text
    assert text.rstrip().endswith(f"verdict: NOT READY: {KEYS.taint} stays on the node")


def test_ready_verdict_says_the_taint_will_go() -> None:
    """All checks passing on a tainted node reads as READY with the taint being removed."""
    ds = daemon_set("cni")
    report = _report(
        daemon_sets=[ds], pods=[pod("cni-x", owner=controller_ref(ds))], csinode=csinode()
    )
    text = render_text(report)
    assert "ok    kube-system/cni: pod kube-system/cni-x" in text
    assert report["verdict"] == f"READY: the agent removes {KEYS.taint}"


def test_json_is_the_same_report() -> None:
    """--json prints the same report as a JSON document."""
    report = _report(tainted=False, completed=True)
    parsed = json.loads(render_json(report))
    assert parsed["ready"] is True
    assert parsed["verdict"] == "READY: the gate is open"
    assert parsed["checks"]["daemonSets"] == []
