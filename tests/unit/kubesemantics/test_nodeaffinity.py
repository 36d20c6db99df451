"""nodeSelector and required node affinity, matched like the scheduler's nodeaffinity helper."""

from __future__ import annotations

from typing import Any

import pytest

from agent.kubesemantics import nodeaffinity
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch

LABELS = {"zone": "a", "pool": "gpu", "cores": "8", "kubernetes.io/hostname": "node-1"}


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def test_node_selector_matches_equal_labels() -> None:
    """A nodeSelector whose every label is on the node with that value matches."""
    assert node_selector_mismatch({"zone": "a", "pool": "gpu"}, LABELS) is None


def test_node_selector_names_the_label_that_differs() -> None:
    """A differing value is reported with the node's actual value."""
    reason = node_selector_mismatch({"pool": "cpu"}, LABELS)
    assert reason == "nodeSelector pool=cpu: node has pool=gpu"


def test_node_selector_missing_label_never_matches_even_empty() -> None:
    """A selector label the node lacks does not match, even with an empty value."""
    assert node_selector_mismatch({"absent": ""}, LABELS) is not None


@pytest.mark.parametrize(
    ("term", "matches"),
    [
        (_expr("zone", "In", "a", "b"), True),
        (_expr("zone", "In", "c"), False),
        (_expr("zone", "NotIn", "c"), True),
        (_expr("absent", "NotIn", "c"), True),
        (_expr("pool", "Exists"), True),
        (_expr("absent", "Exists"), False),
        (_expr("absent", "DoesNotExist"), True),
        (_expr("cores", "Gt", "4"), True),
        (_expr("cores", "Lt", "4"), False),
        (_expr("zone", "Gt", "4"), False),
        (_expr("absent", "Gt", "4"), False),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}, True),
        (
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]},
            False,
        ),
        (
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-2"]}]},
            True,
        ),
        ({}, False),
    ],
)
def test_required_terms_follow_selector_semantics(term: dict[str, Any], matches: bool) -> None:
    """Each operator, matchFields on metadata.name, and the empty term behave as upstream."""
    reason = required_affinity_mismatch(_required(term), LABELS, "node-1")
    assert (reason is None) is matches


def test_terms_are_ored_and_requirements_anded() -> None:
    """Any matching term is enough; within a term every requirement must hold."""
    both = {
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]},
            {"key": "pool", "operator": "In", "values": ["cpu"]},
        ]
    }
    assert required_affinity_mismatch(_required(both), LABELS, "node-1") is not None
    assert (
        required_affinity_mismatch(_required(both, _expr("zone", "In", "a")), LABELS, "n") is None
    )


def test_an_unparsable_term_does_not_spoil_the_others() -> None:
    """A malformed term never matches, but another term can still match."""
    bad = _expr("zone", "In")  # In needs values
    assert required_affinity_mismatch(_required(bad), LABELS, "node-1") is not None
    assert "unparsable" in str(required_affinity_mismatch(_required(bad), LABELS, "node-1"))
    assert required_affinity_mismatch(_required(bad, _expr("zone", "In", "a")), LABELS, "x") is None


def test_matchfields_only_accepts_in_and_notin_with_one_value() -> None:
    """matchFields with Exists or with several values is a parse error, hence no match."""
    exists = {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}
    several = {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1", "x"]}]
    }
    assert required_affinity_mismatch(_required(exists), LABELS, "node-1") is not None
    assert required_affinity_mismatch(_required(several), LABELS, "node-1") is not None


def test_no_required_affinity_matches_every_node() -> None:
    """Without required affinity (preferred only) any node is accepted."""
    spec: dict[str, Any] = {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    }
    assert required_affinity_mismatch(spec, LABELS, "node-1") is None
    assert required_affinity_mismatch({}, LABELS, "node-1") is None


def _preferred(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "preference": preference} for weight, preference in terms
                ]
            }
        }
    }


def _prefers(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


@pytest.mark.parametrize(
    ("spec", "labels", "weight"),
    [
        pytest.param(_preferred((10, _prefers("zone", "a"))), {"zone": "a"}, 10, id="one-match"),
        pytest.param(_preferred((10, _prefers("zone", "a"))), {"zone": "b"}, 0, id="no-match"),
        pytest.param(
            _preferred((10, _prefers("zone", "a")), (5, _prefers("disk", "ssd"))),
            {"zone": "a", "disk": "ssd"},
            15,
            id="weights-add-up",
        ),
        pytest.param(
            _preferred((10, {"matchExpressions": [{"key": "zone", "operator": "Near"}]})),
            {"zone": "a"},
            0,
            id="unparsable-term-adds-nothing",
        ),
        pytest.param(_preferred((10, {})), {"zone": "a"}, 0, id="empty-term-matches-nothing"),
        pytest.param({}, {"zone": "a"}, 0, id="no-affinity"),
    ],
)
def test_preferred_affinity_weight(
    spec: dict[str, Any], labels: dict[str, str], weight: int
) -> None:
    """A node's weight is the sum of the weights of the preferred terms it matches."""
    assert nodeaffinity.preferred_affinity_weight(spec, labels, "n1") == weight
