"""A small declarative loader from YAML mappings into frozen dataclasses.

Why not a schema library: the rules we need are few (types, bounds, choices, unknown keys)
but the error report must name *every* bad field with its full path, in kubelet's camelCase
spelling, and never stop at the first problem. Dataclass fields declare their constraints
in ``metadata``; the loader walks the type hints and collects errors instead of raising.

A field may also be bound to a command-line flag (``setting(flag=...)``; argparse's side is
``agent.config.flags``): ``load_layers`` lays the flags given over a document, each value
parsed and bounded by the same rules and named by its flag, then validates the result once.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NewType, TypeVar, get_args, get_origin

from agent.config.booleans import parse_bool
from agent.config.durations import parse_duration
from agent.config.errors import FieldError
from agent.kubesemantics.quantities import quantity_to_bytes

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
    flag: str | None = None,
    flag_only: bool = False,
) -> Any:
    """Declare a config field: its YAML key (camelCase by default), its bounds, and the
    command-line flag bound to it, if any (``flag_only``: no key in the file at all)."""
    metadata = {
        "key": key,
        "minimum": minimum,
        "maximum": maximum,
        "check": check,
        "flag": flag,
        "in_file": not flag_only,
    }
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def yaml_key(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("key") or camel_case(field.name))


def flag_name(field: dataclasses.Field[Any]) -> str | None:
    """The command-line flag bound to ``field`` (``--dry-run``), or ``None``."""
    flag = field.metadata.get("flag")
    return str(flag) if flag else None


def _file_fields(cls: type[Any]) -> dict[str, dataclasses.Field[Any]]:
    """The fields a document may set, by YAML key (flag-only fields are not among them)."""
    return {yaml_key(f): f for f in dataclasses.fields(cls) if f.metadata.get("in_file", True)}


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


def _must(ok: bool, reason: str) -> None:
    if not ok:
        raise ValueError(reason)


def _duration(value: Any) -> Duration:
    _must(not isinstance(value, bool), "must be a duration string like 30s")
    _must(
        not isinstance(value, int | float), f"must be a duration string with a unit, like {value}s"
    )
    _must(isinstance(value, str), "must be a duration string like 30s")
    seconds = parse_duration(value)
    _must(seconds >= 0, "must not be negative")  # the grammar admits no sign
    return Duration(seconds)


def _byte_quantity(value: Any) -> ByteQuantity:
    _must(
        isinstance(value, str | int) and not isinstance(value, bool),
        "must be a quantity like 512Mi or an integer number of bytes",
    )
    return ByteQuantity(quantity_to_bytes(value))


def _host_port(value: Any) -> HostPort:
    match = _HOST_PORT.match(value) if isinstance(value, str) else None
    _must(match is not None, "must be host:port, e.g. 127.0.0.1:9477")
    _must(match is not None and int(match.group(2)) <= 65535, "port must be 0-65535")
    return HostPort(value)


def _bool(value: Any) -> bool:
    _must(isinstance(value, bool), "must be true or false")
    return bool(value)


def _int(value: Any) -> int:
    _must(isinstance(value, int) and not isinstance(value, bool), "must be an integer")
    _must(INT64_MIN <= value <= INT64_MAX, "must fit in an int64")
    return int(value)


def _float(value: Any) -> float:
    _must(isinstance(value, int | float) and not isinstance(value, bool), "must be a number")
    _must(not isinstance(value, int) or INT64_MIN <= value <= INT64_MAX, "must fit in an int64")
    _must(math.isfinite(value), "must be a finite number")
    return float(value)


def _str(value: Any) -> str:
    _must(isinstance(value, str), "must be a string")
    return str(value)


_SCALARS: dict[Any, Callable[[Any], Any]] = {
    Duration: _duration,
    ByteQuantity: _byte_quantity,
    HostPort: _host_port,
    bool: _bool,
    int: _int,
    float: _float,
    str: _str,
}
"""Each scalar type's parser: the value, or ``ValueError`` with the reason."""


def _parse_scalar(hint: Any, value: Any) -> Any:
    """Parse one scalar of the hinted type; raise ``ValueError`` with the reason."""
    if get_origin(hint) is Literal:
        choices = get_args(hint)
        if value not in choices:
            raise ValueError("must be one of " + ", ".join(repr(c) for c in choices))
        return value
    parse = _SCALARS.get(hint)
    if parse is None:
        raise TypeError(f"unsupported config type {hint!r}")  # a programming error, not input
    return parse(value)


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


_BAD = object()
"""A value that did not parse or broke its bounds (already recorded)."""


def _setting_value(
    field: dataclasses.Field[Any], hint: Any, raw: Any, here: str, out: _Collector
) -> Any:
    """``raw`` parsed as ``field`` and within its bounds, or ``_BAD`` (the error recorded)."""
    before = len(out.errors)
    parsed = _parse_value(hint, raw, here, out)
    if len(out.errors) != before:
        return _BAD
    reason = _bounds(field, parsed)
    if reason:
        out.add(here, reason)
        return _BAD
    return parsed


def _read_section(cls: type[Any], raw: Any, path: str, out: _Collector) -> dict[str, Any]:
    """The values ``raw`` sets, by field name; bad and unknown keys are recorded."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        out.add(path, "must be a mapping")
        raw = {}
    hints = typing.get_type_hints(cls)
    fields = _file_fields(cls)
    for key in raw:
        if key not in fields:
            known = ", ".join(sorted(fields))
            out.add(_join(path, str(key)), f"unknown field (known: {known})")
    values: dict[str, Any] = {}
    for key, field in fields.items():
        if key in raw:
            parsed = _setting_value(field, hints[field.name], raw[key], _join(path, key), out)
            if parsed is not _BAD:
                values[field.name] = parsed
    return values


def _read_flags(cls: type[Any], flags: Mapping[str, Any], out: _Collector) -> dict[str, Any]:
    """The values the flags given set (field name -> what argparse stored), each named by its
    flag. A flag's text for a bool reads as Go's ``strconv.ParseBool`` reads it."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        flag = flag_name(field)
        if field.name not in flags or flag is None:
            continue
        raw = flags[field.name]
        if hints[field.name] is bool and isinstance(raw, str):
            try:
                raw = parse_bool(raw)
            except ValueError as error:
                out.add(flag, str(error))
                continue
        parsed = _setting_value(field, hints[field.name], raw, flag, out)
        if parsed is not _BAD:
            values[field.name] = parsed
    return values


def _validated(cls: type[T], values: dict[str, Any], path: str, out: _Collector, since: int) -> T:
    """``cls`` built from ``values`` (the rest default), then its own cross-field rules."""
    instance = cls(**values)
    validate = getattr(instance, "validate", None)
    # Cross-field rules would judge defaults standing in for rejected values and report
    # problems the operator does not have, so they wait until the fields themselves parse.
    if callable(validate) and len(out.errors) == since:
        for error in validate():
            out.add(_join(path, error.path) if error.path else path, error.reason)
    return instance


def load_section(cls: type[T], raw: Any, path: str, out: _Collector) -> T:
    """Build ``cls`` from ``raw``; bad fields are recorded and get their default."""
    since = len(out.errors)
    return _validated(cls, _read_section(cls, raw, path, out), path, out, since)


def load(cls: type[T], raw: Any) -> tuple[T, list[FieldError]]:
    """Load a whole document; return the value and every error found."""
    out = _Collector()
    value = load_section(cls, raw, "", out)
    return value, out.errors


def load_layers(cls: type[T], raw: Any, flags: Mapping[str, Any]) -> tuple[T, list[FieldError]]:
    """A document with the flags given laid over it (field name -> the flag's value).

    Every value of both is parsed and bounded where it came from, so every bad one is
    named, by its key or by its flag (a bad key the flag overrides too); the flag's value
    wins; then ``validate`` runs once, on the result.
    """
    out = _Collector()
    values = _read_section(cls, raw, "", out) | _read_flags(cls, flags, out)
    return _validated(cls, values, "", out, 0), out.errors
