"""Label and field selectors with apimachinery's grammar and matching rules.

Lists and watches filter with the query-string forms (`labelSelector`, `fieldSelector`); PDBs
and other objects carry the structured `metav1.LabelSelector`. Both must agree with the real
server on edge cases that agents rely on: `!=`/`notin` match objects without the label, an
unset `spec.nodeName` is the empty string, an unknown field label is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .objects import get_path, labels_of, name_of, namespace_of
from .resources import ResourceType
from .status import bad_request

JSON = dict[str, Any]

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_KEY_CHARS = r"[^\s=!<>(),]+"
_NOT_EXISTS = re.compile(rf"^!\s*(?P<key>{_KEY_CHARS})$")
_SET_BASED = re.compile(rf"^(?P<key>{_KEY_CHARS})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQUALITY = re.compile(rf"^(?P<key>{_KEY_CHARS})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s=!<>(),]*)$")
_EXISTS = re.compile(rf"^(?P<key>{_KEY_CHARS})$")

# Field labels whose unset value is not the empty string (bools and counters print "false"/"0").
_FIELD_DEFAULTS: dict[str, str] = {
    "spec.unschedulable": "false",
    "spec.hostNetwork": "false",
    "status.replicas": "0",
}


@dataclass(frozen=True)
class Requirement:
    """One label requirement (`key op values`)."""

    key: str
    op: str  # one of: = != in notin exists !exists gt lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies this requirement (absent labels pass `!=`/`notin`)."""
        value = labels.get(self.key)
        if self.op in ("gt", "lt"):
            return _compare_int(value, int(self.values[0]), greater=self.op == "gt")
        outcome = {
            "=": value is not None and value in self.values,
            "in": value is not None and value in self.values,
            "!=": value is None or value not in self.values,
            "notin": value is None or value not in self.values,
            "exists": value is not None,
            "!exists": value is None,
        }
        return outcome[self.op]


def _compare_int(value: str | None, bound: int, *, greater: bool) -> bool:
    if value is None:
        return False
    try:
        number = int(value)
    except ValueError:
        return False
    return number > bound if greater else number < bound


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of label requirements; no requirements matches everything."""

    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether every requirement holds for `labels`."""
        if self.matches_nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True for the select-everything selector."""
        return not self.requirements and not self.matches_nothing


NOTHING = LabelSelector(matches_nothing=True)
EVERYTHING = LabelSelector()


def _check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_PREFIX.match(prefix)):
        raise ValueError(f"invalid label key {key!r}: prefix part must be a DNS-1123 subdomain")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        raise ValueError(
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise ValueError(
            f"invalid label value {value!r}: a valid label must be an empty string or consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _parse_requirement(chunk: str) -> Requirement:
    text = chunk.strip()
    if match := _NOT_EXISTS.match(text):
        _check_key(match["key"])
        return Requirement(match["key"], "!exists")
    if match := _SET_BASED.match(text):
        _check_key(match["key"])
        raw = match["values"].strip()
        values = tuple(v.strip() for v in raw.split(",")) if raw else ()
        for value in values:
            _check_value(value)
        if not values:
            raise ValueError("for 'in', 'notin' operators, values set can't be empty")
        return Requirement(match["key"], match["op"], values)
    if match := _EQUALITY.match(text):
        _check_key(match["key"])
        op = {"==": "=", "=": "=", "!=": "!=", ">": "gt", "<": "lt"}[match["op"]]
        value = match["value"]
        if op in ("gt", "lt"):
            try:
                int(value)
            except ValueError as exc:
                raise ValueError(
                    f"for 'Gt', 'Lt' operators, the value must be an integer: {value!r}"
                ) from exc
        else:
            _check_value(value)
        return Requirement(match["key"], op, (value,))
    if match := _EXISTS.match(text):
        _check_key(match["key"])
        return Requirement(match["key"], "exists")
    raise ValueError(f"found '{text}', expected: identifier, '!', 'in', 'notin', '=', '==', '!='")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the `labelSelector` query form; raises a 400 `ApiError` on bad syntax."""
    if text is None or not text.strip():
        return EVERYTHING
    try:
        return LabelSelector(tuple(_parse_requirement(c) for c in _split_top_level(text)))
    except ValueError as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from exc


def from_label_selector_object(selector: JSON | None) -> LabelSelector:
    """Convert a `metav1.LabelSelector`: null selects nothing, `{}` selects everything.

    Raises ValueError for an invalid operator (callers treat such objects as matching nothing,
    like the eviction handler does).
    """
    if selector is None:
        return NOTHING
    requirements: list[Requirement] = [
        Requirement(str(k), "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        operator = expr.get("operator")
        if operator not in ops:
            raise ValueError(f"{operator!r} is not a valid label selector operator")
        values = tuple(str(v) for v in expr.get("values") or ())
        if operator in ("In", "NotIn") and not values:
            raise ValueError("values must be non-empty for In and NotIn")
        requirements.append(Requirement(str(expr.get("key")), ops[operator], values))
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class FieldRequirement:
    """One field requirement (`label op value`), op being `=` or `!=`."""

    label: str
    op: str
    value: str


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None, rt: ResourceType) -> tuple[FieldRequirement, ...]:
    """Parse `fieldSelector`; unknown labels for `rt` are a 400 as on the real server."""
    if text is None or not text.strip():
        return ()
    requirements: list[FieldRequirement] = []
    for chunk in _split_unescaped(text, ","):
        requirement = _field_requirement(chunk)
        if requirement is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{chunk}'")
        if not rt.supports_field(requirement.label):
            raise bad_request(f"field label not supported: {requirement.label}")
        requirements.append(requirement)
    return tuple(requirements)


def _field_requirement(chunk: str) -> FieldRequirement | None:
    for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
        index = chunk.find(token)
        if index > 0:
            return FieldRequirement(
                chunk[:index].strip(), op, _unescape(chunk[index + len(token) :])
            )
    return None


def field_value(obj: JSON, label: str) -> str:
    """The string a field label has on `obj`, as the server's field-set conversion renders it."""
    if label == "metadata.name":
        return name_of(obj)
    if label == "metadata.namespace":
        return namespace_of(obj)
    value = get_path(obj, "source.component" if label == "source" else label)
    if value is None:
        return _FIELD_DEFAULTS.get(label, "")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fields_match(obj: JSON, requirements: tuple[FieldRequirement, ...]) -> bool:
    """Whether every field requirement holds for `obj`."""
    for req in requirements:
        equal = field_value(obj, req.label) == req.value
        if equal != (req.op == "="):
            return False
    return True


ObjectFilter = Callable[[JSON], bool]


def object_filter(
    namespace: str | None, labels: LabelSelector, fields: tuple[FieldRequirement, ...]
) -> ObjectFilter:
    """A predicate combining a namespace scope with label and field selectors."""

    def accept(obj: JSON) -> bool:
        if namespace is not None and namespace_of(obj) != namespace:
            return False
        return labels.matches(labels_of(obj)) and fields_match(obj, fields)

    return accept
