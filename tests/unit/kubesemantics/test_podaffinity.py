"""Required pod anti-affinity terms: namespaces, selectors and topology domains."""

from __future__ import annotations

from typing import Any

import pytest

from agent.kubesemantics.labelselector import SelectorError
from agent.kubesemantics.podaffinity import affinity_term, required_anti_affinity_terms


def _term(**fields: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}, **fields}


@pytest.mark.parametrize(
    ("raw", "namespace", "labels", "selected"),
    [
        pytest.param(_term(), "shop", {"app": "db"}, True, id="own-namespace-matching-labels"),
        pytest.param(_term(), "other", {"app": "db"}, False, id="other-namespace"),
        pytest.param(
            _term(namespaces=["other"]), "other", {"app": "db"}, True, id="listed-namespace"
        ),
        pytest.param(
            _term(namespaces=["other"]), "shop", {"app": "db"}, False, id="list-replaces-own"
        ),
        pytest.param(_term(), "shop", {"app": "web"}, False, id="labels-differ"),
        pytest.param(
            {"topologyKey": "zone"}, "shop", {"app": "db"}, False, id="no-selector-selects-none"
        ),
        pytest.param(_term(labelSelector={}), "shop", {}, True, id="empty-selector-selects-all"),
        pytest.param(
            _term(namespaceSelector={"matchLabels": {"team": "x"}}),
            "other",
            {"app": "db"},
            False,
            id="namespace-selector-not-read",
        ),
    ],
)
def test_term_selects_by_namespace_and_labels(
    raw: dict[str, Any], namespace: str, labels: dict[str, str], selected: bool
) -> None:
    """A term of a pod in ``shop`` selects pods of its namespaces whose labels match."""
    assert affinity_term(raw, "shop").selects(namespace, labels) is selected


def test_only_required_anti_affinity_terms_are_read() -> None:
    """Preferred anti-affinity and pod affinity terms are not required anti-affinity."""
    affinity = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term()]},
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": _term()}
            ],
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(topologyKey="host")],
        },
    }
    terms = required_anti_affinity_terms(affinity, "shop")
    assert [t.topology_key for t in terms] == ["host"]
    assert required_anti_affinity_terms(None, "shop") == ()


def test_a_broken_selector_raises() -> None:
    """A selector the API server would reject is reported, not read as "selects nothing"."""
    bad = _term(labelSelector={"matchExpressions": [{"key": "a", "operator": "Near"}]})
    with pytest.raises(SelectorError):
        required_anti_affinity_terms(
            {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [bad]}}, "s"
        )
