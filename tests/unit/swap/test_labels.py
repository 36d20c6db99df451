"""The Node's swap label, capacity annotation and opt-in taint: only our keys change."""

from typing import Any

from agent.kube.patches import check_ownership
from agent.runtime.ownership import owned_keys
from agent.swap.labels import SWAP_CAPACITY_ANNOTATION, SWAP_LABEL, swap_node_ops

owns = owned_keys()
"""The agent's own predicate: keys under ``kubelet-companion.io/``."""


def node(**metadata: Any) -> dict[str, Any]:
    taints = metadata.pop("taints", None)
    spec = {} if taints is None else {"taints": taints}
    return {"metadata": {"name": "n1", "resourceVersion": "3", **metadata}, "spec": spec}


def apply(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A tiny JSON-patch applier for the ops these builders emit."""
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = obj
        for part in parts[:-1]:
            target = target[part]
        if op["op"] == "remove":
            del target[parts[-1]]
        else:
            target[parts[-1]] = op["value"]
    return obj


def test_fresh_node_gets_label_and_annotation_without_taint_by_default() -> None:
    """Swap on, taint off: label true and capacity annotation, no taint."""
    result = apply(node(), swap_node_ops(node(), swap_on=True, capacity_bytes=4096, taint=False))
    assert result["metadata"]["labels"] == {SWAP_LABEL: "true"}
    assert result["metadata"]["annotations"] == {SWAP_CAPACITY_ANNOTATION: "4096"}
    assert "taints" not in result["spec"]


def test_other_labels_annotations_and_taints_survive() -> None:
    """Foreign keys are carried over untouched; the ownership check passes."""
    before = node(
        labels={"kubernetes.io/hostname": "n1"},
        annotations={"node.alpha.kubernetes.io/ttl": "0"},
        taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
    )
    ops = swap_node_ops(before, swap_on=True, capacity_bytes=1, taint=True)
    check_ownership(before, ops, owns)
    after = apply(
        node(
            **{k: v for k, v in before["metadata"].items() if k != "name"},
            taints=list(before["spec"]["taints"]),
        ),
        ops,
    )
    assert after["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    assert after["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] == "0"
    assert after["spec"]["taints"] == [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
        {"key": "kubelet-companion.io/swap", "effect": "NoSchedule"},
    ]


def test_taint_goes_when_swap_goes_off() -> None:
    """Our taint is removed once swap is off, and the label flips to false."""
    before = node(
        labels={SWAP_LABEL: "true"},
        annotations={SWAP_CAPACITY_ANNOTATION: "4096"},
        taints=[{"key": "kubelet-companion.io/swap", "effect": "NoSchedule"}],
    )
    after = apply(before, swap_node_ops(before, swap_on=False, capacity_bytes=0, taint=True))
    assert after["metadata"]["labels"][SWAP_LABEL] == "false"
    assert after["metadata"]["annotations"][SWAP_CAPACITY_ANNOTATION] == "0"
    assert after["spec"]["taints"] == []


def test_up_to_date_node_needs_no_patch() -> None:
    """Nothing to change means no operations, so no API call."""
    current = node(labels={SWAP_LABEL: "true"}, annotations={SWAP_CAPACITY_ANNOTATION: "7"})
    assert swap_node_ops(current, swap_on=True, capacity_bytes=7, taint=False) == []
