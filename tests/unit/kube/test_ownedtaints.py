"""Owned taints: added with our annotation, removed only when our annotation names them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.kube.ownedtaints import ForeignTaint, add_ops, remove_ops
from agent.kubesemantics.nodekeys import OUT_OF_SERVICE_ANNOTATION, RESCUE_ANNOTATION
from agent.kubesemantics.taintownership import out_of_service_taint, rescue_taint

RESCUE = rescue_taint("kube-system/dns")
OOS = out_of_service_taint()
OTHER = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}


def _node(
    taints: list[dict[str, Any]] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"name": "n", "resourceVersion": "5"}, "spec": {}}
    if taints is not None:
        node["spec"]["taints"] = taints
    if annotations is not None:
        node["metadata"]["annotations"] = annotations
    return node


def test_add_keeps_other_taints_and_records_ownership() -> None:
    """Our taint is appended after the others, and our annotation names its value."""
    ops = add_ops(_node([OTHER], {"a": "b"}), RESCUE)
    assert ops == [
        {
            "op": "replace",
            "path": "/spec/taints",
            "value": [
                OTHER,
                {"key": "CriticalAddonsOnly", "value": "kube-system_dns", "effect": "NoSchedule"},
            ],
        },
        {
            "op": "add",
            "path": "/metadata/annotations/kubelet-companion.io~1critical-addon-rescue",
            "value": "kube-system_dns",
        },
    ]


def test_add_on_a_node_without_taints_or_annotations() -> None:
    """Absent lists and maps are added whole."""
    assert add_ops(_node(), OOS) == [
        {"op": "add", "path": "/spec/taints", "value": [dict(OOS.taint_json)]},
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {OUT_OF_SERVICE_ANNOTATION: "nodeshutdown"},
        },
    ]


def test_add_twice_is_no_change() -> None:
    """A taint we already added, with its annotation, needs nothing."""
    node = _node([dict(RESCUE.taint_json)], {RESCUE_ANNOTATION: "kube-system_dns"})
    assert add_ops(node, RESCUE) == []


@pytest.mark.parametrize(
    "taint",
    [
        pytest.param(
            {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"},
            id="platform-value",
        ),
        pytest.param({"key": "CriticalAddonsOnly", "effect": "NoSchedule"}, id="no-value"),
    ],
)
def test_add_refuses_a_foreign_taint_in_our_slot(taint: dict[str, Any]) -> None:
    """Someone else's taint with our key and effect is never replaced or doubled."""
    with pytest.raises(ForeignTaint):
        add_ops(_node([taint]), RESCUE)


def test_remove_takes_only_the_recorded_taint() -> None:
    """Removal drops the taint our annotation names and the annotation; the rest stays."""
    node = _node(
        [OTHER, dict(OOS.taint_json)], {OUT_OF_SERVICE_ANNOTATION: "nodeshutdown", "x": "y"}
    )
    assert remove_ops(node, OOS) == [
        {"op": "replace", "path": "/spec/taints", "value": [OTHER]},
        {"op": "remove", "path": "/metadata/annotations/kubelet-companion.io~1out-of-service"},
    ]


def test_remove_without_our_annotation_touches_nothing() -> None:
    """An out-of-service taint an operator added is not ours to remove."""
    assert remove_ops(_node([dict(OOS.taint_json)]), OOS) == []


def test_remove_leaves_a_taint_whose_value_we_did_not_record() -> None:
    """Only the value our annotation records goes; a different value in the slot stays."""
    foreign = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}
    node = _node([foreign], {RESCUE_ANNOTATION: "kube-system_dns"})
    assert remove_ops(node, RESCUE) == [
        {
            "op": "remove",
            "path": "/metadata/annotations/kubelet-companion.io~1critical-addon-rescue",
        }
    ]
