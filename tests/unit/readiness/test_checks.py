"""The three checks and the verdict, from plain snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.readiness.checks import assess, pod_readiness
from tests.harness.kubeobjects import controller_ref
from tests.harness.readiness_objects import KEYS, csinode, daemon_set, node, pod

CSI = f"{KEYS.csi_annotation_prefix}ebs"


def _assess(
    *,
    pods: Sequence[dict[str, Any]] = (),
    daemon_sets: Sequence[dict[str, Any]] = (),
    csi: dict[str, Any] | None = None,
    the_node: dict[str, Any] | None = None,
    namespaces: tuple[str, ...] = ("kube-system",),
) -> Any:
    return assess(
        node=the_node or node(),
        pods=pods,
        daemon_sets=daemon_sets,
        csinode=csi,
        keys=KEYS,
        namespaces=namespaces,
    )


def test_nothing_critical_is_ready_and_empty() -> None:
    """A node with no critical DaemonSets or pods passes at once."""
    assessment = _assess()
    assert assessment.ready
    assert assessment.empty


def test_a_required_daemonset_without_pod_fails_check_one() -> None:
    """A DaemonSet that should run here but has no pod here is unscheduled."""
    assessment = _assess(daemon_sets=[daemon_set("cni")])
    assert [c.name for c in assessment.unscheduled] == ["kube-system/cni"]
    assert not assessment.ready


def test_the_pod_is_matched_by_controller_uid_not_name() -> None:
    """Only a pod whose controller ownerReference carries the DaemonSet's UID counts."""
    ds = daemon_set("cni", uid="right")
    impostor = pod("cni-abcde", owner=controller_ref(daemon_set("cni", uid="wrong")))
    assert not _assess(daemon_sets=[ds], pods=[impostor]).daemon_sets[0].scheduled
    real = pod("cni-fghij", owner=controller_ref(ds))
    check = _assess(daemon_sets=[ds], pods=[real]).daemon_sets[0]
    assert check.scheduled
    assert check.pod == "kube-system/cni-fghij"


def test_a_terminating_daemon_pod_does_not_count_as_scheduled() -> None:
    """A daemon pod being deleted is on its way out: the replacement is what we wait for."""
    ds = daemon_set("cni")
    assessment = _assess(
        daemon_sets=[ds], pods=[pod("cni-old", owner=controller_ref(ds), deleting=True)]
    )
    assert assessment.unscheduled
    assert assessment.pods == ()


def test_an_unready_critical_pod_fails_check_two_and_says_why() -> None:
    """A labelled pod whose Ready condition is False is unready, with the condition's reason."""
    assessment = _assess(pods=[pod("dns", ready=False)])
    assert [c.name for c in assessment.unready] == ["kube-system/dns"]
    assert "ContainersNotReady" in assessment.unready[0].detail
    assert not assessment.ready


def test_a_daemon_pod_is_critical_even_without_the_label() -> None:
    """Pods of a critical DaemonSet are checked for readiness whatever their own labels."""
    ds = daemon_set("cni")
    assessment = _assess(
        daemon_sets=[ds], pods=[pod("cni-x", owner=controller_ref(ds), labels={}, ready=False)]
    )
    assert [c.name for c in assessment.unready] == ["kube-system/cni-x"]


def test_unlabelled_pods_and_other_namespaces_are_ignored() -> None:
    """Only labelled pods (or daemon pods) in the configured namespaces are critical."""
    assessment = _assess(
        pods=[
            pod("app", labels={}, ready=False),
            pod("elsewhere", namespace="monitoring", ready=False),
        ]
    )
    assert assessment.ready
    assert assessment.pods == ()


def test_other_namespaces_count_when_configured() -> None:
    """Adding a namespace to the config makes its labelled pods critical."""
    assessment = _assess(
        pods=[pod("csi", namespace="storage", ready=False)], namespaces=("kube-system", "storage")
    )
    assert not assessment.ready


def test_succeeded_pods_are_done_and_failed_bare_pods_hold() -> None:
    """A Succeeded pod is ignored; a Failed bare pod is not Ready and holds the gate."""
    assert _assess(pods=[pod("init", phase="Succeeded", ready=False)]).ready
    failed = _assess(pods=[pod("bare", phase="Failed", ready=False)])
    assert not failed.ready
    assert failed.unready[0].detail.startswith("Failed")


def test_a_failed_daemon_pod_waits_for_its_replacement() -> None:
    """A Failed daemon pod is replaced by its controller, so check one waits, not check two."""
    ds = daemon_set("cni")
    assessment = _assess(
        daemon_sets=[ds], pods=[pod("cni-x", owner=controller_ref(ds), phase="Failed")]
    )
    assert assessment.unscheduled
    assert assessment.unready == ()


def test_a_pod_without_conditions_is_reported_pending() -> None:
    """A pod the kubelet has not reported on yet is unready, 'no Ready condition yet'."""
    check = pod_readiness(pod("fresh", ready=None, scheduled=None, phase="Pending"))
    assert not check.ready
    assert check.detail == "Pending: no Ready condition yet"


def test_a_missing_csi_driver_fails_check_three() -> None:
    """A driver named in a critical pod's annotation must be listed in the CSINode."""
    csi_pod = pod("ebs-node", annotations={CSI: "ebs.csi.aws.com"})
    missing = _assess(pods=[csi_pod], csi=csinode(drivers=["other.csi"]))
    assert [d.driver for d in missing.missing_drivers] == ["ebs.csi.aws.com"]
    assert missing.missing_drivers[0].pods == ("kube-system/ebs-node",)
    assert _assess(pods=[csi_pod], csi=csinode(drivers=["ebs.csi.aws.com"])).ready


def test_no_csinode_means_no_drivers() -> None:
    """Without a CSINode every required driver is missing."""
    assessment = _assess(pods=[pod("ebs-node", annotations={CSI: "ebs.csi.aws.com"})])
    assert not assessment.ready
    assert not assessment.csinode_found


def test_one_pod_may_wait_for_several_drivers() -> None:
    """Any suffix after the prefix works, so one pod can name several drivers."""
    annotations = {CSI: "a.csi", f"{KEYS.csi_annotation_prefix}second": "b.csi"}
    assessment = _assess(
        pods=[pod("multi", annotations=annotations)], csi=csinode(drivers=["a.csi"])
    )
    assert [d.driver for d in assessment.missing_drivers] == ["b.csi"]


def test_csi_annotations_of_non_critical_pods_are_ignored() -> None:
    """Only critical pods' CSI annotations are requirements."""
    assessment = _assess(pods=[pod("app", labels={}, annotations={CSI: "ebs.csi.aws.com"})])
    assert assessment.ready


def test_intolerant_daemonsets_are_listed_but_do_not_hold() -> None:
    """A DaemonSet that does not tolerate the gate shows as intolerant and the verdict passes."""
    assessment = _assess(daemon_sets=[daemon_set("picky", tolerations=[])])
    assert [c.name for c in assessment.intolerant] == ["kube-system/picky"]
    assert assessment.ready


def test_daemonsets_without_the_critical_label_are_ignored() -> None:
    """Only DaemonSets labelled critical count, whatever a watch might have delivered."""
    assert _assess(daemon_sets=[daemon_set("plain", labels={})]).ready


def test_everything_ready_passes() -> None:
    """Scheduled daemon pods, Ready pods and registered drivers make a passing verdict."""
    ds = daemon_set("cni")
    assessment = _assess(
        daemon_sets=[ds, daemon_set("gpu", node_selector={"pool": "gpu"})],
        pods=[pod("cni-x", owner=controller_ref(ds)), pod("csi", annotations={CSI: "d"})],
        csi=csinode(drivers=["d"]),
    )
    assert assessment.ready
    assert not assessment.empty
