"""A small declarative loader from YAML mappings into frozen dataclasses.

Why not a schema library: the rules we need are few (types, bounds, choices, unknown keys)
but the error report must name *every* bad field with its full path, in kubelet's camelCase
spelling, and never stop at the first problem. Dataclass fields declare their constraints
in ``metadata``; the loader walks the type hints and collects errors instead of raising.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NewType, TypeVar, get_args, get_origin

from agent.config.durations import parse_duration
from agent.config.errors import FieldError
from agent.config.quantities import quantity_to_bytes

Duration = NewType("Duration", float)
"""Seconds, written in config as a Go duration string (``30s``, ``1m30s``)."""

ByteQuantity = NewType("ByteQuantity", int)
"""Bytes, written in config as a Kubernetes quantity (``512Mi``) or a plain integer."""

HostPort = NewType("HostPort", str)
"""``host:port`` for a listener; the port must be 0-65535."""

T = TypeVar("T")
Validator = Callable[[Any], str | None]


def setting(
    default: Any = dataclasses.MISSING,
    *,
    key: str | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    check: Validator | None = None,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """Declare a config field: its YAML key (camelCase by default) and its bounds."""
    metadata = {"key": key, "minimum": minimum, "maximum": maximum, "check": check}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def yaml_key(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("key") or camel_case(field.name))


class _Collector:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, path: str, reason: str) -> None:
        self.errors.append(FieldError(path, reason))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""Every integer of a config or policy fits in an int64, as in the Go structs they mirror: a
10^400 from YAML would otherwise reach float arithmetic (``OverflowError``)."""
_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^:\s\[\]]*):(\d{1,5})$")


def _parse_scalar(hint: Any, value: Any) -> Any:  # noqa: PLR0911, PLR0912 - one branch per type
    """Parse one scalar of the hinted type; raise ``ValueError`` with the reason."""
    if hint is Duration:
        if isinstance(value, bool):
            raise ValueError("must be a duration string like 30s")
        if isinstance(value, int | float):
            raise ValueError(f"must be a duration string with a unit, like {value}s")
        if not isinstance(value, str):
            raise ValueError("must be a duration string like 30s")
        seconds = parse_duration(value)
        if seconds < 0:  # pragma: no cover - the grammar admits no sign
            raise ValueError("must not be negative")
        return Duration(seconds)
    if hint is ByteQuantity:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError("must be a quantity like 512Mi or an integer number of bytes")
        return ByteQuantity(quantity_to_bytes(value))
    if hint is HostPort:
        if not isinstance(value, str) or not (match := _HOST_PORT.match(value)):
            raise ValueError("must be host:port, e.g. 127.0.0.1:9477")
        if int(match.group(2)) > 65535:
            raise ValueError("port must be 0-65535")
        return HostPort(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("must be an integer")
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError("must fit in an int64")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            raise ValueError("must fit in an int64")
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return value
    if get_origin(hint) is Literal:
        choices = get_args(hint)
        if value not in choices:
            raise ValueError("must be one of " + ", ".join(repr(c) for c in choices))
        return value
    raise TypeError(f"unsupported config type {hint!r}")  # a programming error, not input


def _bounds(field: dataclasses.Field[Any], value: Any) -> str | None:
    minimum = field.metadata.get("minimum")
    maximum = field.metadata.get("maximum")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if minimum is not None and value < minimum:
            return f"must be >= {minimum:g}"
        if maximum is not None and value > maximum:
            return f"must be <= {maximum:g}"
    check = field.metadata.get("check")
    if check is not None:
        return typing.cast(str | None, check(value))
    return None


def _parse_value(hint: Any, value: Any, path: str, out: _Collector) -> Any:  # noqa: PLR0911 - one exit per shape
    if hint is Any:
        return value  # kept raw for a later, typed pass (e.g. plugin args chosen by name)
    origin = get_origin(hint)
    if origin in (dict, Mapping):
        (_, item_hint) = get_args(hint)
        if not isinstance(value, Mapping):
            out.add(path, "must be a mapping")
            return None
        return {
            str(key): _parse_value(item_hint, item, _join(path, str(key)), out)
            for key, item in value.items()
        }
    if origin in (list, Sequence, tuple):
        (item_hint, *_) = get_args(hint)
        if not isinstance(value, list):
            out.add(path, "must be a list")
            return None
        items = [_parse_value(item_hint, item, f"{path}[{i}]", out) for i, item in enumerate(value)]
        return tuple(items)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in get_args(hint) if arg is not type(None)]
        if value is None:
            return None
        return _parse_value(options[0], value, path, out)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return load_section(hint, value, path, out)
    try:
        return _parse_scalar(hint, value)
    except ValueError as error:
        out.add(path, str(error))
        return None


def load_section(cls: type[T], raw: Any, path: str, out: _Collector) -> T:
    """Build ``cls`` from ``raw``; bad fields are recorded and get their default."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        out.add(path, "must be a mapping")
        raw = {}
    assert dataclasses.is_dataclass(cls)  # noqa: S101 - the loader is only called on dataclasses
    hints = typing.get_type_hints(cls)
    fields = {yaml_key(f): f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in fields:
            known = ", ".join(sorted(fields))
            out.add(_join(path, str(key)), f"unknown field (known: {known})")
    values: dict[str, Any] = {}
    errors_before_section = len(out.errors)
    for key, field in fields.items():
        if key not in raw:
            continue
        here = _join(path, key)
        before = len(out.errors)
        parsed = _parse_value(hints[field.name], raw[key], here, out)
        if len(out.errors) != before:
            continue
        reason = _bounds(field, parsed)
        if reason:
            out.add(here, reason)
            continue
        values[field.name] = parsed
    instance = cls(**values)
    validate = getattr(instance, "validate", None)
    # Cross-field rules would judge defaults standing in for rejected values and report
    # problems the operator does not have, so they wait until the fields themselves parse.
    if callable(validate) and len(out.errors) == errors_before_section:
        for error in validate():
            out.add(_join(path, error.path) if error.path else path, error.reason)
    return instance


def load(cls: type[T], raw: Any) -> tuple[T, list[FieldError]]:
    """Load a whole document; return the value and every error found."""
    out = _Collector()
    value = load_section(cls, raw, "", out)
    return value, out.errors
