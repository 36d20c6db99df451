"""Event reasons and messages name what is missing; the throttle limits them per reason."""

from __future__ import annotations

from agent.readiness import notices
from agent.readiness.checks import assess
from tests.harness.readiness_objects import GATE, KEYS, daemon_set, node, pod


def test_each_failing_check_gets_its_warning_naming_the_missing() -> None:
    """The three Warnings name the DaemonSets, pods and drivers that are missing."""
    assessment = assess(
        node=node(),
        pods=[pod("dns", ready=False, annotations={f"{KEYS.csi_annotation_prefix}x": "x.csi"})],
        daemon_sets=[daemon_set("cni"), daemon_set("picky", tolerations=[])],
        csinode=None,
        keys=KEYS,
        namespaces=("kube-system",),
    )
    by_reason = {n.reason: n for n in notices.warnings_for(assessment, GATE)}
    assert set(by_reason) == {
        "UnscheduledNodeCriticalDaemonSets",
        "UnreadyNodeCriticalPods",
        "UnreadyRequiredCSIDrivers",
        "IntolerantNodeCriticalDaemonSets",
    }
    assert "kube-system/cni" in by_reason["UnscheduledNodeCriticalDaemonSets"].message
    assert "kube-system/dns" in by_reason["UnreadyNodeCriticalPods"].message
    assert "x.csi" in by_reason["UnreadyRequiredCSIDrivers"].message
    assert "kube-system/picky" in by_reason["IntolerantNodeCriticalDaemonSets"].message
    assert all(n.warning for n in by_reason.values())


def test_long_lists_are_cut() -> None:
    """A message names at most ten items and counts the rest."""
    many = [daemon_set(f"ds-{i:02}") for i in range(13)]
    assessment = assess(
        node=node(), pods=[], daemon_sets=many, csinode=None, keys=KEYS, namespaces=("kube-system",)
    )
    (notice,) = notices.warnings_for(assessment, GATE)
    assert notice.message.endswith("and 3 more")


def test_lifted_is_normal_and_says_how_long() -> None:
    """The lift notice is a Normal NodeCriticalComponentsReady with the wait."""
    notice = notices.lifted(GATE, 12.34)
    assert not notice.warning
    assert notice.reason == "NodeCriticalComponentsReady"
    assert "12.3s" in notice.message


def test_throttle_is_per_reason() -> None:
    """A reason is allowed once per interval; other reasons are independent."""
    throttle = notices.Throttle(60)
    assert throttle.allow("A", 0)
    assert not throttle.allow("A", 59)
    assert throttle.allow("B", 59)
    assert throttle.allow("A", 60)
