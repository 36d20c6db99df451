"""The gate's patch builders: only our taint and annotation change, everything else is kept."""

from __future__ import annotations

from agent import DOMAIN
from agent.kube.patches import check_ownership
from agent.kubesemantics.timestamps import rfc3339
from agent.readiness import node_writes
from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION
from tests.harness.readiness_objects import GATE, node, taint

STAMP = "2025-06-01T12:00:00Z"


def _owns(key: str) -> bool:
    return key.startswith(f"{DOMAIN}/")


def test_lift_keeps_every_other_taint_in_order() -> None:
    """Removing the gate replaces the taint list with the same list minus our key."""
    current = node(taints=[taint("a"), taint(), taint("b", "NoExecute", "v")])
    ops = node_writes.lift(GATE, STAMP)(current)
    assert ops[0] == {
        "op": "replace",
        "path": "/spec/taints",
        "value": [taint("a"), taint("b", "NoExecute", "v")],
    }
    check_ownership(current, ops, _owns)


def test_lift_records_completion_in_the_same_patch() -> None:
    """The bootstrap-completed annotation goes with the removal, never separately."""
    ops = node_writes.lift(GATE, STAMP)(node())
    assert {
        "op": "add",
        "path": "/metadata/annotations",
        "value": {BOOTSTRAP_COMPLETED_ANNOTATION: STAMP},
    } in ops


def test_lift_keeps_an_existing_completion_time() -> None:
    """A node already marked completed keeps its original time."""
    done = node(annotations={BOOTSTRAP_COMPLETED_ANNOTATION: "2024-01-01T00:00:00Z", "x": "y"})
    ops = node_writes.lift(GATE, STAMP)(done)
    assert [op["path"] for op in ops] == ["/spec/taints"]


def test_lift_is_a_noop_when_someone_already_lifted() -> None:
    """Without the gate taint there is nothing to write, not even the annotation."""
    assert node_writes.lift(GATE, STAMP)(node(taints=[taint("a")])) == []


def test_add_appends_the_gate_and_keeps_others() -> None:
    """Re-adding appends a NoSchedule gate taint after the existing ones."""
    ops = node_writes.add(GATE)(node(taints=[taint("a")]))
    assert ops == [{"op": "replace", "path": "/spec/taints", "value": [taint("a"), taint()]}]
    assert node_writes.add(GATE)(node()) == []


def test_mark_completed_touches_only_our_annotation() -> None:
    """Marking completion adds one annotation key under our domain to an existing map."""
    current = node(taints=[], annotations={"other/key": "v"})
    ops = node_writes.mark_completed(STAMP)(current)
    assert ops == [
        {
            "op": "add",
            "path": "/metadata/annotations/kubelet-companion.io~1bootstrap-completed",
            "value": STAMP,
        }
    ]
    check_ownership(current, ops, _owns)


def test_times_round_trip_as_rfc3339() -> None:
    """Completion times are written as RFC 3339 UTC and parse back to the same second."""
    assert rfc3339(1_700_000_000) == "2023-11-14T22:13:20Z"
    assert node_writes.parse_time("2023-11-14T22:13:20Z") == 1_700_000_000
    assert node_writes.parse_time("2023-11-14T22:13:20.123456789+00:00") == 1_700_000_000.123456
    assert node_writes.parse_time("2023-11-14T22:13:20") is None
    assert node_writes.parse_time("garbage") is None
