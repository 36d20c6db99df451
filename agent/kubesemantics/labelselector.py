"""Label selectors, in both of Kubernetes' forms, matched as apimachinery matches them.

One copy for every capability: the descheduler's policy ``nodeSelector`` is the string form
(``labels.Parse``: ``a=b,c!=d,e in (f,g),!h``), PodDisruptionBudgets and the DefaultEvictor's
``labelSelector`` are the structured form (``metav1.LabelSelector``: ``matchLabels`` and
``matchExpressions``). Both become a tuple of ``Requirement`` that are ANDed.

Rules kept from apimachinery: an empty selector matches everything (``LabelSelectorAsSelector``
of ``{}``); a ``None`` structured selector matches nothing (the PDB rule); ``NotIn`` and ``!=``
match a missing label; ``Gt``/``Lt`` exist only in the string form's set-based extension, and
are rejected here as the API rejects them in ``matchExpressions``.

Pure: plain data in, answers out. Malformed selectors raise ``SelectorError`` with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.kubesemantics.names import label_value_problem, qualified_name_problem

OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


class SelectorError(ValueError):
    """A selector the API server would refuse to parse."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    """``In``, ``NotIn``, ``Exists`` or ``DoesNotExist`` (``=`` is ``In`` with one value)."""
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        found = present and labels[self.key] in self.values
        return found if self.operator == "In" else not found


Selector = tuple[Requirement, ...]
"""ANDed requirements; the empty tuple matches every label set."""


def matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    return all(requirement.matches(labels) for requirement in selector)


def _checked(key: str, operator: str, values: list[str]) -> Requirement:
    if qualified_name_problem(key):
        raise SelectorError(f"invalid label key {key!r}")
    for value in values:
        if label_value_problem(value):
            raise SelectorError(f"invalid label value {value!r} for key {key!r}")
    if operator in ("In", "NotIn") and not values:
        raise SelectorError(f"{key} {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{key} {operator} takes no values")
    return Requirement(key, operator, frozenset(values))


def from_label_selector(raw: Mapping[str, Any] | None) -> Selector | None:
    """``metav1.LabelSelector`` -> requirements; ``None`` (no selector) stays ``None``."""
    if raw is None:
        return None
    requirements: list[Requirement] = []
    for key, value in sorted((raw.get("matchLabels") or {}).items()):
        requirements.append(_checked(str(key), "In", [str(value)]))
    for expression in raw.get("matchExpressions") or []:
        operator = str(expression.get("operator") or "")
        if operator not in OPERATORS:
            raise SelectorError(f"unknown operator {operator!r}")
        values = [str(value) for value in expression.get("values") or []]
        requirements.append(_checked(str(expression.get("key") or ""), operator, values))
    return tuple(requirements)


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|[^\s!=(),]+)")


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:  # pragma: no cover - the token pattern accepts every character
            raise SelectorError(f"cannot parse selector at {text[position:]!r}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _value_set(tokens: list[str], index: int) -> tuple[list[str], int]:
    if index >= len(tokens) or tokens[index] != "(":
        raise SelectorError("expected '(' after in/notin")
    values: list[str] = []
    index += 1
    while index < len(tokens) and tokens[index] != ")":
        if tokens[index] != ",":
            values.append(tokens[index])
        index += 1
    if index >= len(tokens):
        raise SelectorError("missing ')'")
    return values, index + 1


def parse_selector(text: str) -> Selector:
    """The string form (``labels.Parse``); ``""`` selects everything."""
    tokens = _tokens(text)
    requirements: list[Requirement] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "!":  # noqa: S105 - the negation operator, not a secret
            if index + 1 >= len(tokens):
                raise SelectorError("'!' needs a key")
            requirements.append(_checked(tokens[index + 1], "DoesNotExist", []))
            index += 2
        else:
            key = token
            following = tokens[index + 1] if index + 1 < len(tokens) else ","
            if following == ",":
                requirements.append(_checked(key, "Exists", []))
                index += 1
            elif following in ("=", "==", "!="):
                if index + 2 >= len(tokens) or tokens[index + 2] == ",":
                    value = ""
                    index += 2
                else:
                    value = tokens[index + 2]
                    index += 3
                operator = "NotIn" if following == "!=" else "In"
                requirements.append(_checked(key, operator, [value]))
            elif following in ("in", "notin"):
                values, index = _value_set(tokens, index + 2)
                operator = "In" if following == "in" else "NotIn"
                requirements.append(_checked(key, operator, values))
            else:
                raise SelectorError(f"unexpected {following!r} after {key!r}")
        if index < len(tokens):
            if tokens[index] != ",":
                raise SelectorError(f"expected ',' before {tokens[index]!r}")
            index += 1
    return tuple(requirements)
