"""The taint record's wire form: one annotation on the descheduler's Lease.

``kubelet-companion.io/node-taints`` holds compact JSON, by our node annotation's key (the
kind of taint), then by node: the taint's value, or, for a rescue, an object with its end
(``until``, Unix seconds) and its add-on (``pod``)::

    {"kubelet-companion.io/critical-addon-rescue":
        {"node-b": {"value": "kube-system_dns", "until": 1767225600, "pod": "kube-system/dns"}},
     "kubelet-companion.io/emptying": {"node-c": "HighNodeUtilization"}}

Bounded: all of an object's annotations share 256 KiB, and the churn guard's memory takes up
to 150 KiB of it, so a record is never written larger than ``MAX_RECORD_BYTES`` (about 1,500
emptying taints; a plan that would need more gets fewer taints, never a lost entry).
Reading is strict about shape and lenient about content: an entry that is not well-formed,
or of a kind we do not add, is left out; text that is not a JSON object is an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from agent.descheduler.model.taintrecord import RecordedTaint, RecordKey, TaintRecord
from agent.kubesemantics.taintownership import OWNED_ANNOTATIONS, TAINT_VALUE_MAX

TAINT_RECORD_ANNOTATION = "kubelet-companion.io/node-taints"
MAX_RECORD_BYTES = 64 * 1024
NAME_MAX = 253
"""A node name (a DNS subdomain), and a pod's namespace or name, are at most this long."""


class UnreadableRecord(ValueError):
    """The annotation is not a JSON object: nothing of it can be trusted."""


def encode_record(record: TaintRecord) -> str | None:
    """Compact, sorted JSON; ``None`` for an empty record (the annotation goes)."""
    if not len(record):
        return None
    wire: dict[str, dict[str, Any]] = {}
    for annotation, by_node in sorted(record.entries.items()):
        wire[annotation] = {node: _entry_wire(entry) for node, entry in sorted(by_node.items())}
    return json.dumps(wire, separators=(",", ":"), sort_keys=True)


def _entry_wire(entry: RecordedTaint) -> str | dict[str, Any]:
    if not entry.until and not entry.pod:
        return entry.value
    wire: dict[str, Any] = {"value": entry.value}
    if entry.until:
        wire["until"] = math.floor(entry.until)
    if entry.pod:
        wire["pod"] = entry.pod
    return wire


def decode_record(text: str | None) -> TaintRecord:
    """The record in ``text`` (none: empty); raises ``UnreadableRecord``."""
    if not text:
        return TaintRecord()
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise UnreadableRecord(f"not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise UnreadableRecord("not a JSON object")
    added: list[tuple[RecordKey, RecordedTaint]] = []
    for annotation, by_node in raw.items():
        if annotation not in OWNED_ANNOTATIONS or not isinstance(by_node, dict):
            continue
        for node, wire in by_node.items():
            entry = _entry(wire)
            if entry is not None and isinstance(node, str) and 0 < len(node) <= NAME_MAX:
                added.append((RecordKey(annotation, node), entry))
    return TaintRecord().with_entries(added)


def _entry(wire: object) -> RecordedTaint | None:
    """One entry, or ``None`` when it is not well-formed."""
    if isinstance(wire, str):
        return RecordedTaint(wire) if len(wire) <= TAINT_VALUE_MAX else None
    if not isinstance(wire, Mapping):
        return None
    value, until, pod = wire.get("value"), wire.get("until", 0), wire.get("pod", "")
    if not isinstance(value, str) or len(value) > TAINT_VALUE_MAX:
        return None
    if isinstance(until, bool) or not isinstance(until, int | float) or not math.isfinite(until):
        return None
    if not isinstance(pod, str) or len(pod) > 2 * NAME_MAX + 1:
        return None
    return RecordedTaint(value, float(until), pod)
