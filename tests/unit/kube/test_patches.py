"""Pure JSON-patch builders for our Node: only our keys change, others survive."""

import pytest

from agent.kube.patches import (
    OwnershipError,
    Taint,
    check_ownership,
    escape_pointer,
    has_taint,
    metadata_map_ops,
    taint_ops,
)
from agent.kubesemantics.nodekeys import DESCHEDULER_KEYS, RESCUE_ANNOTATION
from agent.runtime.ownership import owned_keys

OURS = "kubelet-companion.io/shutting-down"


owns = owned_keys()
"""The agent's own predicate: keys under ``kubelet-companion.io/``."""


def node(taints: list[dict[str, str]] | None = None, **metadata: object) -> dict[str, object]:
    spec = {} if taints is None else {"taints": taints}
    return {"metadata": {"name": "n1", "resourceVersion": "7", **metadata}, "spec": spec}


def test_adding_a_taint_to_a_node_without_taints_adds_the_list() -> None:
    """With no spec.taints, the list is added (a replace would fail on a missing path)."""
    assert taint_ops(node(), ensure=Taint(OURS)) == [
        {"op": "add", "path": "/spec/taints", "value": [{"key": OURS, "effect": "NoSchedule"}]}
    ]


def test_adding_keeps_every_other_taint_in_order() -> None:
    """spec.taints is atomic: the replacement carries the others unchanged."""
    other = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    (op,) = taint_ops(node([other]), ensure=Taint(OURS))
    assert op == {
        "op": "replace",
        "path": "/spec/taints",
        "value": [other, {"key": OURS, "effect": "NoSchedule"}],
    }


def test_ensure_is_idempotent() -> None:
    """A taint already present yields no operation."""
    assert taint_ops(node([{"key": OURS, "effect": "NoSchedule"}]), ensure=Taint(OURS)) == []


def test_removal_drops_only_our_key() -> None:
    """Removing our taint keeps foreign taints, including ones with the same effect."""
    other = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    (op,) = taint_ops(node([other, {"key": OURS, "effect": "NoSchedule"}]), remove=OURS)
    assert op["value"] == [other]
    assert taint_ops(node([other]), remove=OURS) == []


def test_has_taint_matches_key_and_optional_effect() -> None:
    """has_taint looks at the key, and at the effect when asked."""
    tainted = node([{"key": OURS, "effect": "NoExecute"}])
    assert has_taint(tainted, OURS)
    assert not has_taint(tainted, OURS, "NoSchedule")


def test_label_ops_add_replace_and_remove_key_by_key() -> None:
    """Labels change one escaped pointer at a time; unchanged values produce nothing."""
    current = node(labels={"kubelet-companion.io/swap": "false", "kubelet-companion.io/old": "x"})
    ops = metadata_map_ops(
        current,
        "labels",
        set_values={"kubelet-companion.io/swap": "true", "kubelet-companion.io/new": "1"},
        remove=("kubelet-companion.io/old", "kubelet-companion.io/absent"),
    )
    assert ops == [
        {"op": "replace", "path": "/metadata/labels/kubelet-companion.io~1swap", "value": "true"},
        {"op": "add", "path": "/metadata/labels/kubelet-companion.io~1new", "value": "1"},
        {"op": "remove", "path": "/metadata/labels/kubelet-companion.io~1old"},
    ]


def test_annotations_map_is_created_when_missing() -> None:
    """Without metadata.annotations the whole map is added at once."""
    assert metadata_map_ops(node(), "annotations", set_values={"kubelet-companion.io/a": "1"}) == [
        {"op": "add", "path": "/metadata/annotations", "value": {"kubelet-companion.io/a": "1"}}
    ]


def test_json_pointer_escaping() -> None:
    """RFC 6901: ~ before / so that ~1 in a key survives."""
    assert escape_pointer("a/b~c") == "a~1b~0c"


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "add", "path": "/metadata/labels/team", "value": "x"}],
        [{"op": "add", "path": "/metadata/labels", "value": {"team": "x"}}],
        [{"op": "replace", "path": "/spec/unschedulable", "value": True}],
        [{"op": "replace", "path": "/spec/taints", "value": []}],
    ],
)
def test_ownership_check_refuses_foreign_changes(ops: list[dict[str, object]]) -> None:
    """Foreign labels, other fields, and dropping a foreign taint are refused before sending."""
    with pytest.raises(OwnershipError):
        check_ownership(node([{"key": "dedicated", "effect": "NoSchedule"}]), ops, owns)


@pytest.mark.parametrize("key", sorted(DESCHEDULER_KEYS))
def test_the_agent_owns_none_of_the_deschedulers_keys(key: str) -> None:
    """A key the descheduler writes (its rescue, out-of-service and emptying taints and their
    annotations) is never the agent's, even under our domain or named as an extra key."""
    assert not owns(key)
    assert not owned_keys([key])(key)


def test_ownership_check_refuses_the_deschedulers_annotation() -> None:
    """The agent's patch helper refuses to write the descheduler's record on its own Node."""
    current = node([])
    ops = metadata_map_ops(current, "annotations", set_values={RESCUE_ANNOTATION: "kube-system_x"})
    with pytest.raises(OwnershipError):
        check_ownership(current, ops, owns)


def test_ownership_check_allows_our_own_changes() -> None:
    """Our taint and labels under our domain pass the check."""
    current = node([{"key": "dedicated", "effect": "NoSchedule"}])
    check_ownership(current, taint_ops(current, ensure=Taint(OURS)), owns)
    check_ownership(
        current,
        metadata_map_ops(current, "labels", set_values={"kubelet-companion.io/swap": "true"}),
        owns,
    )


def test_a_taint_with_a_value_keeps_it() -> None:
    """A valued taint is written with its value; one without has no value key at all."""
    assert Taint(OURS, "NoExecute", "v").as_json() == {
        "key": OURS,
        "effect": "NoExecute",
        "value": "v",
    }
    assert Taint(OURS).as_json() == {"key": OURS, "effect": "NoSchedule"}


def test_has_taint_finds_a_matching_effect() -> None:
    """Asked for the effect a taint has, has_taint says yes."""
    assert has_taint(node([{"key": OURS, "effect": "NoExecute"}]), OURS, "NoExecute")


def test_unchanged_labels_yield_no_operation() -> None:
    """Setting a label to the value it already has sends nothing (no needless write)."""
    current = node(labels={"kubelet-companion.io/swap": "true"})
    assert (
        metadata_map_ops(current, "labels", set_values={"kubelet-companion.io/swap": "true"}) == []
    )


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param(
            [
                {
                    "op": "add",
                    "path": "/metadata/annotations",
                    "value": {"kubelet-companion.io/a": "1"},
                }
            ],
            id="annotations-map",
        ),
        pytest.param(
            [{"op": "add", "path": "/metadata/annotations/kubelet-companion.io~1a", "value": "1"}],
            id="annotation-key",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels/kubelet-companion.io~1old"}],
            id="label-removal",
        ),
    ],
)
def test_ownership_check_allows_our_annotations_and_label_removals(
    ops: list[dict[str, object]],
) -> None:
    """Our own annotations, as a map or key by key, and removing our labels pass the check."""
    check_ownership(node(), ops, owns)


def test_ownership_check_refuses_a_foreign_annotation() -> None:
    """An annotation outside our domain is refused like a foreign label."""
    ops = [{"op": "add", "path": "/metadata/annotations/team", "value": "x"}]
    with pytest.raises(OwnershipError):
        check_ownership(node(), ops, owns)


def test_ownership_check_allows_removing_our_taint_beside_foreign_ones() -> None:
    """Dropping our own taint keeps the foreign ones, so the check lets it through."""
    current = node(
        [{"key": "dedicated", "effect": "NoSchedule"}, {"key": OURS, "effect": "NoSchedule"}]
    )
    check_ownership(current, taint_ops(current, remove=OURS), owns)


def test_ownership_check_looks_past_a_valid_taint_change() -> None:
    """A foreign label after a valid taint op is still refused: every op is checked."""
    current = node()
    ops = [
        *taint_ops(current, ensure=Taint(OURS)),
        {"op": "add", "path": "/metadata/labels/team", "value": "x"},
    ]
    with pytest.raises(OwnershipError):
        check_ownership(current, ops, owns)
