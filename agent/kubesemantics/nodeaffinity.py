"""``nodeSelector`` and required node affinity, matched against one Node as the scheduler does.

One copy for every capability (the readiness gate's DaemonSet placement, the descheduler's
node fit).

Follows ``component-helpers/scheduling/corev1/nodeaffinity``: the nodeSelector is a set of
label equalities (a missing label never matches); the required terms are ORed; within a
term, ``matchExpressions`` (labels) and ``matchFields`` (only ``metadata.name``) are ANDed; a
term with neither matches nothing; a term that does not parse matches nothing but does not
spoil the other terms. Each function returns ``None`` on a match and otherwise the reason,
so the CLI can say why a DaemonSet is not expected here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_INTEGER = re.compile(r"^[-+]?[0-9]+$")
_INT64 = 2**63


class _BadTerm(ValueError):
    """A selector requirement that the API server's parser would reject."""


def node_selector_mismatch(selector: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    for key, value in sorted(selector.items()):
        if key not in labels:
            return f"nodeSelector {key}={value}: node has no label {key}"
        if labels[key] != str(value):
            return f"nodeSelector {key}={value}: node has {key}={labels[key]}"
    return None


def _as_int(text: str) -> int:
    if not _INTEGER.match(text) or not -_INT64 <= int(text) < _INT64:
        raise _BadTerm(f"{text!r} is not an integer")
    return int(text)


def _label_requirement(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = str(requirement.get("key") or "")
    operator = str(requirement.get("operator") or "")
    values = [str(value) for value in requirement.get("values") or []]
    if not key:
        raise _BadTerm("a requirement has no key")
    present = key in labels
    if operator in ("In", "NotIn"):
        if not values:
            raise _BadTerm(f"{key} {operator} needs values")
        found = present and labels[key] in values
        return found if operator == "In" else not found
    if operator in ("Exists", "DoesNotExist"):
        if values:
            raise _BadTerm(f"{key} {operator} takes no values")
        return present if operator == "Exists" else not present
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise _BadTerm(f"{key} {operator} needs exactly one value")
        limit = _as_int(values[0])
        if not present:
            return False
        try:
            actual = _as_int(labels[key])
        except _BadTerm:
            return False
        return actual > limit if operator == "Gt" else actual < limit
    raise _BadTerm(f"unknown operator {operator!r}")


def _field_requirement(requirement: Mapping[str, Any], fields: Mapping[str, str]) -> bool:
    key = str(requirement.get("key") or "")
    operator = str(requirement.get("operator") or "")
    values = [str(value) for value in requirement.get("values") or []]
    if operator not in ("In", "NotIn"):
        raise _BadTerm(f"matchFields supports In and NotIn, not {operator!r}")
    if len(values) != 1:
        raise _BadTerm(f"matchFields {key} {operator} needs exactly one value")
    equal = fields.get(key, "") == values[0]
    return equal if operator == "In" else not equal


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions = term.get("matchExpressions") or []
    match_fields = term.get("matchFields") or []
    if not expressions and not match_fields:
        return False
    fields = {"metadata.name": name} if name else {}
    # Evaluate everything so that a malformed requirement rejects the term even when an
    # earlier requirement already failed, exactly as the parser would before matching.
    label_results = [_label_requirement(r, labels) for r in expressions]
    field_results = [_field_requirement(r, fields) for r in match_fields]
    return all(label_results) and all(field_results)


def required_affinity_mismatch(
    pod_spec: Mapping[str, Any], labels: Mapping[str, str], name: str
) -> str | None:
    """Why the required node affinity rejects the node, or ``None`` when it accepts it."""
    affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if affinity is None:
        return None
    terms = affinity.get("nodeSelectorTerms") or []
    problems = []
    for term in terms:
        try:
            if _term_matches(term, labels, name):
                return None
        except _BadTerm as error:
            problems.append(str(error))
    if problems:
        return "required node affinity does not match (unparsable: " + "; ".join(problems) + ")"
    return "required node affinity does not match"


def preferred_affinity_weight(
    pod_spec: Mapping[str, Any], labels: Mapping[str, str], name: str
) -> int:
    """The summed weights of the preferred node affinity terms the node matches.

    ``GetNodeWeightGivenPodPreferredAffinity``: each ``preference`` is one node selector
    term; a term that does not parse adds nothing.
    """
    preferred = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )
    total = 0
    for term in preferred or []:
        weight = term.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool):
            continue
        try:
            if _term_matches(term.get("preference") or {}, labels, name):
                total += weight
        except _BadTerm:
            continue
    return total
