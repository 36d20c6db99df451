"""Which critical DaemonSets the gate expects a pod from: the DaemonSet controller's rules."""

from __future__ import annotations

from agent.readiness.placement import place
from tests.harness.readiness_objects import GATE, daemon_set, node, taint

STARTUP = ("node.kubernetes.io/not-ready",)


def test_a_tolerant_daemonset_without_constraints_is_required() -> None:
    """A DaemonSet with no selector that tolerates the gate must have a pod here."""
    assert place(daemon_set("cni"), node(), gate_key=GATE).required


def test_a_nodeselector_mismatch_is_not_required() -> None:
    """A nodeSelector the node does not satisfy means the DaemonSet does not run here."""
    placement = place(daemon_set("gpu", node_selector={"pool": "gpu"}), node(), gate_key=GATE)
    assert not placement.required
    assert not placement.intolerant
    assert "pool" in placement.reason


def test_a_matching_nodeselector_is_required() -> None:
    """A nodeSelector the node satisfies keeps the DaemonSet required."""
    ds = daemon_set("gpu", node_selector={"pool": "gpu"})
    assert place(ds, node(labels={"pool": "gpu"}), gate_key=GATE).required


def test_template_node_name_for_another_node_is_not_required() -> None:
    """A template pinned to another node by nodeName does not run here."""
    assert not place(daemon_set("pinned", node="node-2"), node(), gate_key=GATE).required


def test_matchfields_on_metadata_name_selects_this_node() -> None:
    """Required affinity with matchFields metadata.name In [us] is required; other names not."""

    def pinned(name: str) -> dict[str, object]:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}

    here = daemon_set("a", affinity={"nodeAffinity": pinned("node-1")})
    there = daemon_set("b", affinity={"nodeAffinity": pinned("node-2")})
    assert place(here, node(), gate_key=GATE).required
    assert not place(there, node(), gate_key=GATE).required


def test_an_untolerated_foreign_noschedule_taint_is_not_required() -> None:
    """Another NoSchedule taint the template does not tolerate keeps the DaemonSet off."""
    ds = daemon_set("agent", tolerations=[{"key": GATE, "operator": "Exists"}])
    placement = place(ds, node(taints=[taint(), taint("dedicated", value="db")]), gate_key=GATE)
    assert not placement.required
    assert "dedicated=db:NoSchedule" in placement.reason


def test_a_noexecute_taint_counts_too() -> None:
    """NoExecute taints are checked like NoSchedule ones."""
    ds = daemon_set("agent", tolerations=[{"key": GATE, "operator": "Exists"}])
    assert not place(ds, node(taints=[taint("evict", "NoExecute")]), gate_key=GATE).required


def test_default_tolerations_let_a_daemonset_onto_a_cordoned_node() -> None:
    """The unschedulable taint is tolerated by default, as the DaemonSet controller adds it."""
    ds = daemon_set("agent", tolerations=[{"key": GATE, "operator": "Exists"}])
    cordoned = node(taints=[taint(), taint("node.kubernetes.io/unschedulable")])
    assert place(ds, cordoned, gate_key=GATE).required


def test_a_daemonset_not_tolerating_the_gate_is_reported_not_required() -> None:
    """Not tolerating the gate taint marks it intolerant (reported) and not required."""
    ds = daemon_set("picky", tolerations=[])
    placement = place(ds, node(), gate_key=GATE)
    assert placement.intolerant
    assert not placement.required
    assert GATE in placement.reason


def test_intolerance_is_judged_even_when_the_node_is_not_tainted() -> None:
    """A DaemonSet that would not tolerate the gate is reported even after the gate opened."""
    assert place(daemon_set("picky", tolerations=[]), node(taints=[]), gate_key=GATE).intolerant


def test_a_daemonset_that_does_not_run_here_is_not_called_intolerant() -> None:
    """Selector mismatches win: a DaemonSet not meant for this node is simply not expected."""
    ds = daemon_set("picky", tolerations=[], node_selector={"pool": "gpu"})
    assert not place(ds, node(), gate_key=GATE).intolerant


def test_a_valued_gate_taint_needs_a_matching_toleration() -> None:
    """The node's actual gate taint (with its value) is what the toleration must match."""
    ds = daemon_set("agent", tolerations=[{"key": GATE, "operator": "Equal", "value": "x"}])
    assert place(ds, node(taints=[taint(value="x")]), gate_key=GATE).required
    assert place(ds, node(taints=[taint(value="y")]), gate_key=GATE).intolerant


def test_startup_taints_do_not_excuse_a_daemonset() -> None:
    """A DaemonSet kept off only by a start-up taint is still required, and says why it waits."""
    ds = daemon_set("proxy", tolerations=[{"key": GATE, "operator": "Exists"}])
    booting = node(taints=[taint(), taint("node.kubernetes.io/not-ready")])
    placement = place(ds, booting, gate_key=GATE, startup_taints=STARTUP)
    assert placement.required
    assert placement.waiting_for_taints == ("node.kubernetes.io/not-ready:NoSchedule",)


def test_without_startup_taints_the_controllers_rule_applies_literally() -> None:
    """With no start-up taints configured, not-ready:NoSchedule skips the DaemonSet."""
    ds = daemon_set("proxy", tolerations=[{"key": GATE, "operator": "Exists"}])
    booting = node(taints=[taint(), taint("node.kubernetes.io/not-ready")])
    assert not place(ds, booting, gate_key=GATE, startup_taints=()).required


def test_a_daemonset_being_deleted_is_not_required() -> None:
    """The DaemonSet controller creates no pods for a DaemonSet being deleted."""
    ds = daemon_set("old")
    ds["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert not place(ds, node(), gate_key=GATE).required
