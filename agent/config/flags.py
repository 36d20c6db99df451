"""Command-line flags bound to the fields of a settings dataclass.

Upstream binds each flag to a field of its options struct (``fs.DurationVar(&o.Interval,
"descheduling-interval", o.Interval, ...)``); so do we. The flag's name is declared once, on
the field (``setting(flag=...)``); argparse stores what it read under the field's name, and
nothing at all for a flag that was not given, so the config file keeps its say there. What
argparse stored is parsed and checked by the schema, like a value from the file
(``schema.load_layers``). The field's type gives the flag its shape: a bool is a switch (or
takes ``true|false``), a ``Literal`` a choice, a number goes through ``int``/``float``, and
the help may show the field's default as ``{default}``, so no default is written twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin

from agent.config.durations import format_duration
from agent.config.schema import Duration, flag_name


def bind_flag(
    parser: argparse.ArgumentParser,
    cls: type[Any],
    name: str,
    *,
    help: str,  # noqa: A002 - argparse's own name for it
    metavar: str | None = None,
    convert: Callable[[str], Any] | None = None,
    takes_value: bool = False,
) -> None:
    """Add the flag bound to ``cls``'s field ``name``; ``takes_value``: a bool flag that
    takes ``true|false`` (bare, it means true), as Go's boolean flags do."""
    field = _field(cls, name)
    flag = flag_name(field)
    if flag is None:
        raise TypeError(f"{cls.__name__}.{name} is bound to no flag")  # a programming error
    hint = typing.get_type_hints(cls)[name]
    shape: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS}
    if hint is bool and takes_value:
        shape |= {"nargs": "?", "const": "true", "metavar": "true|false"}
    elif hint is bool:
        shape["action"] = "store_true"
    elif get_origin(hint) is Literal:
        shape["choices"] = get_args(hint)
    elif hint in (int, float):
        shape["type"] = hint
    if convert is not None:
        shape["type"] = convert
    if metavar is not None or hint is Duration:
        shape["metavar"] = metavar or "DURATION"
    parser.add_argument(flag, help=help.format(default=describe(field.default, hint)), **shape)


def flags_given(args: argparse.Namespace, cls: type[Any]) -> dict[str, Any]:
    """What the flags bound to ``cls`` that were given stored, by field name."""
    given = vars(args)
    return {
        field.name: given[field.name]
        for field in dataclasses.fields(cls)
        if flag_name(field) is not None and field.name in given
    }


def describe(value: Any, hint: Any) -> str:
    """A default as the command line spells it (``30s``, ``true``, ``50``)."""
    if hint is Duration:
        return format_duration(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _field(cls: type[Any], name: str) -> dataclasses.Field[Any]:
    for field in dataclasses.fields(cls):
        if field.name == name:
            return field
    raise TypeError(f"{cls.__name__} has no field {name!r}")  # a programming error
