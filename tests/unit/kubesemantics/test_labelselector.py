"""Label selectors in both forms, matched as apimachinery matches them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.kubesemantics.labelselector import (
    SelectorError,
    from_label_selector,
    matches,
    parse_selector,
)

LABELS = {"app": "web", "tier": "front", "zone": "a"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", True, id="empty-selects-everything"),
        pytest.param("app=web", True, id="equals"),
        pytest.param("app==web", True, id="double-equals"),
        pytest.param("app!=web", False, id="not-equals"),
        pytest.param("missing!=x", True, id="not-equals-matches-missing"),
        pytest.param("app=web,tier=back", False, id="and"),
        pytest.param("zone in (a, b)", True, id="in"),
        pytest.param("zone notin (a,b)", False, id="notin"),
        pytest.param("app", True, id="exists"),
        pytest.param("!app", False, id="does-not-exist"),
        pytest.param("!missing,app=web", True, id="mixed"),
        pytest.param("node-role.kubernetes.io/worker=", False, id="empty-value"),
    ],
)
def test_string_form(text: str, expected: bool) -> None:
    """``labels.Parse`` syntax: equality, set-based and existence requirements, ANDed."""
    assert matches(parse_selector(text), LABELS) is expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("zone in a", id="in-without-parens"),
        pytest.param("zone in (a", id="unclosed"),
        pytest.param("a b", id="missing-operator"),
        pytest.param("bad key=x", id="space-in-key"),
        pytest.param("!", id="bare-negation"),
    ],
)
def test_string_form_errors(text: str) -> None:
    """A selector the API server would refuse raises ``SelectorError``."""
    with pytest.raises(SelectorError):
        parse_selector(text)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, None, id="absent-selects-nothing"),
        pytest.param({}, True, id="empty-selects-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, True, id="match-labels"),
        pytest.param({"matchLabels": {"app": "db"}}, False, id="match-labels-mismatch"),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}]},
            True,
            id="match-expressions",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
            False,
            id="does-not-exist",
        ),
    ],
)
def test_structured_form(raw: dict[str, Any] | None, expected: bool | None) -> None:
    """``metav1.LabelSelector``: ``None`` selects nothing, ``{}`` everything."""
    selector = from_label_selector(raw)
    if expected is None:
        assert selector is None
    else:
        assert selector is not None
        assert matches(selector, LABELS) is expected


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, id="gt"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]}, id="in-without-values"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            id="exists-with-values",
        ),
    ],
)
def test_structured_form_errors(raw: dict[str, Any]) -> None:
    """Operators and values the API rejects in ``matchExpressions`` raise ``SelectorError``."""
    with pytest.raises(SelectorError):
        from_label_selector(raw)
