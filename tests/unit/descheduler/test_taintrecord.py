"""Our taint record: its entries, its wire form on the Lease, and the marks it does not hold."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry, Gauge

from agent.descheduler.cache.projection import project_node
from agent.descheduler.cache.taintrecord import (
    UnreadableRecord,
    decode_record,
    encode_record,
)
from agent.descheduler.live.taintmarks import UnrecordedMarks
from agent.descheduler.model.cluster import NodeInfo
from agent.descheduler.model.taintrecord import (
    Mark,
    RecordedTaint,
    RecordKey,
    TaintRecord,
    unrecorded_marks,
)
from agent.kubesemantics.nodekeys import (
    EMPTYING_ANNOTATION,
    OUT_OF_SERVICE_ANNOTATION,
    RESCUE_ANNOTATION,
)
from tests.harness.deschedulerstate import node

RESCUE = RecordedTaint("kube-system_dns", 1_800_000_600.0, "kube-system/dns")
EMPTYING = RecordedTaint("HighNodeUtilization")
RECORD = TaintRecord().with_entries(
    [
        (RecordKey(RESCUE_ANNOTATION, "b"), RESCUE),
        (RecordKey(EMPTYING_ANNOTATION, "c"), EMPTYING),
        (RecordKey(EMPTYING_ANNOTATION, "d"), EMPTYING),
    ]
)


def test_entries_are_added_replaced_and_dropped_without_changing_the_original() -> None:
    """``with_entries`` and ``without`` return new records; a kind left empty disappears."""
    later = RecordedTaint("kube-system_dns", 1_800_000_900.0, "kube-system/dns")
    changed = RECORD.with_entries([(RecordKey(RESCUE_ANNOTATION, "b"), later)])
    assert changed.get(RESCUE_ANNOTATION, "b") == later
    assert RECORD.get(RESCUE_ANNOTATION, "b") == RESCUE
    dropped = RECORD.without([RecordKey(RESCUE_ANNOTATION, "b"), RecordKey("x", "absent")])
    assert RESCUE_ANNOTATION not in dropped.entries
    assert len(dropped) == 2
    assert dropped.entries == {EMPTYING_ANNOTATION: {"c": EMPTYING, "d": EMPTYING}}


def test_the_wire_form_round_trips_compactly() -> None:
    """Sorted compact JSON; a taint without an end or an add-on is just its value."""
    text = encode_record(RECORD)
    assert text is not None
    assert json.loads(text) == {
        EMPTYING_ANNOTATION: {"c": "HighNodeUtilization", "d": "HighNodeUtilization"},
        RESCUE_ANNOTATION: {
            "b": {"value": "kube-system_dns", "until": 1_800_000_600, "pod": "kube-system/dns"}
        },
    }
    assert " " not in text
    assert decode_record(text) == RECORD


def test_an_empty_record_removes_the_annotation() -> None:
    """Nothing recorded: no annotation (``None``), and no annotation reads as empty."""
    assert encode_record(TaintRecord()) is None
    assert len(decode_record(None)) == 0
    assert len(decode_record("")) == 0


@pytest.mark.parametrize("text", ["{", "[]", '"x"', "7"])
def test_text_that_is_not_a_json_object_is_unreadable(text: str) -> None:
    """What is not a JSON object cannot be trusted in any part: an error, not a guess."""
    with pytest.raises(UnreadableRecord):
        decode_record(text)


@pytest.mark.parametrize(
    "entry",
    [
        7,
        None,
        "x" * 64,
        {"until": 5},
        {"value": 5},
        {"value": "v", "until": "soon"},
        {"value": "v", "until": True},
        {"value": "v", "until": float("inf")},
        {"value": "v", "pod": 5},
        {"value": "v", "pod": "p" * 600},
    ],
    ids=repr,
)
def test_an_entry_that_is_not_well_formed_is_left_out(entry: object) -> None:
    """A malformed entry is dropped; the well-formed one beside it is kept."""
    text = json.dumps(
        {EMPTYING_ANNOTATION: {"bad": entry, "good": "HighNodeUtilization"}},
        allow_nan=True,
    )
    assert decode_record(text).entries == {EMPTYING_ANNOTATION: {"good": EMPTYING}}


def test_kinds_we_do_not_add_and_bad_node_names_are_left_out() -> None:
    """Only our three kinds of taint, on node names a node may have."""
    text = json.dumps(
        {
            "kubelet-companion.io/other": {"n": "v"},
            "example.com/x": {"n": "v"},
            OUT_OF_SERVICE_ANNOTATION: {"": "nodeshutdown", "n" * 254: "nodeshutdown", "ok": "x"},
            RESCUE_ANNOTATION: [],
        }
    )
    assert decode_record(text).entries == {OUT_OF_SERVICE_ANNOTATION: {"ok": RecordedTaint("x")}}


def test_marks_the_record_does_not_hold_are_unrecorded() -> None:
    """A mark is vouched for only by an entry for the same node, kind and value."""
    annotations = [
        ("b", {RESCUE_ANNOTATION: "kube-system_dns"}),  # recorded
        ("c", {EMPTYING_ANNOTATION: "HighNodeUtilization", "other.io/x": "y"}),  # recorded
        ("e", {RESCUE_ANNOTATION: "kube-system_dns"}),  # another node's entry
        ("d", {EMPTYING_ANNOTATION: "Other"}),  # another value
        ("f", {OUT_OF_SERVICE_ANNOTATION: "nodeshutdown"}),  # no entry at all
    ]
    keys = [RESCUE_ANNOTATION, EMPTYING_ANNOTATION, OUT_OF_SERVICE_ANNOTATION]
    assert unrecorded_marks(RECORD, annotations, keys) == [
        Mark("d", EMPTYING_ANNOTATION, "Other"),
        Mark("e", RESCUE_ANNOTATION, "kube-system_dns"),
        Mark("f", OUT_OF_SERVICE_ANNOTATION, "nodeshutdown"),
    ]


def _nodes(**annotations: dict[str, str]) -> dict[str, NodeInfo]:
    built = {}
    for name, marks in annotations.items():
        body = node(name)
        body["metadata"]["annotations"] = marks
        built[name] = project_node(body)
    return built


def test_unrecorded_marks_are_logged_once_and_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each ignored mark is warned about when first seen, not every cycle; the gauge says
    how many there are now, by annotation."""
    registry = CollectorRegistry()
    gauge = Gauge("marks", "m", ["annotation"], registry=registry)
    marks = UnrecordedMarks(gauge)
    nodes = _nodes(
        a={RESCUE_ANNOTATION: "kube-system_dns"}, b={RESCUE_ANNOTATION: "kube-system_dns"}
    )
    record = TaintRecord().with_entries([(RecordKey(RESCUE_ANNOTATION, "b"), RESCUE)])
    assert marks.check(nodes, record, {}) == [Mark("a", RESCUE_ANNOTATION, "kube-system_dns")]
    assert marks.check(nodes, record, {}) == [Mark("a", RESCUE_ANNOTATION, "kube-system_dns")]
    assert capsys.readouterr().out.count("our record does not hold") == 1
    assert registry.get_sample_value("marks", {"annotation": RESCUE_ANNOTATION}) == 1
    assert registry.get_sample_value("marks", {"annotation": EMPTYING_ANNOTATION}) == 0
    assert marks.check({}, record, {}) == []
    assert registry.get_sample_value("marks", {"annotation": RESCUE_ANNOTATION}) == 0


def test_a_mark_we_just_took_off_is_not_taken_for_a_forged_one() -> None:
    """The node cache may still show a mark this process removed (its entry already gone):
    not unrecorded until the cache shows it gone, then forgotten; a new mark is judged."""
    marks = UnrecordedMarks()
    key = RecordKey(EMPTYING_ANNOTATION, "c")
    released = {key: "HighNodeUtilization"}
    lagging = _nodes(c={EMPTYING_ANNOTATION: "HighNodeUtilization"})
    assert marks.check(lagging, TaintRecord(), released) == []
    assert released == {key: "HighNodeUtilization"}
    assert marks.check(_nodes(c={}), TaintRecord(), released) == []
    assert released == {}
    assert marks.check(lagging, TaintRecord(), released) == [
        Mark("c", EMPTYING_ANNOTATION, "HighNodeUtilization")
    ]
