"""Bytes in, one parsed YAML document out, or a ``ConfigError``: never a parser traceback.

Every YAML file an operator hands us (the agent's config, the descheduler's policy,
``--scheduler-config``, kubelet's config) goes through here, so bad input always ends the
same way: a ``ConfigError`` with a reason, exit 2. PyYAML rejects most bad input with
``YAMLError``, but not all of it: an empty ``!!float`` raises ``IndexError`` inside the
constructor, a bare ``!!timestamp`` ``AttributeError``, and deep nesting ``RecursionError``.
Whatever the parser raises on a document is the document's fault, so any exception from it
is reported as "not valid YAML". Text must be UTF-8 (an optional byte-order mark is
allowed), as YAML 1.2 and kubelet's own config loader expect.

A file is read through ``boundedread``: at most ``MAX_CONFIG_BYTES``, counted as read, so a
FIFO or a device cannot feed it without end. A document is also refused when it is too deep
or too big to walk (``shape_problem``): a config nests under ten levels and holds a few
hundred values, while YAML aliases can make a small file hold billions (each alias counts
again where it is used), and everything after the parser reads them all.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from agent.config.boundedread import CONFIG_LIMIT_HINT, MAX_CONFIG_BYTES, read_limited
from agent.config.errors import ConfigError, FieldError

MAX_NESTING = 32
"""Deeper documents are refused before anything walks them recursively."""
MAX_VALUES = 100_000
"""Values a document may hold, aliases counted each time they are used."""


def shape_problem(raw: Any) -> str:
    """Why the document is too deep or too large to read, or "" (walked iteratively)."""
    pending = [(raw, 1)]
    seen = 0
    while pending:
        current, depth = pending.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"more than {MAX_VALUES} values (YAML aliases count each time they are used)"
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > MAX_NESTING:
            return f"nested deeper than {MAX_NESTING} levels"
        pending.extend((child, depth + 1) for child in children)
    return ""


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        reason = f"not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        raise ConfigError(source, [FieldError("", reason)]) from None


def _where(error: BaseException) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"


def parse_yaml(data: bytes | str, source: str) -> Any:
    """Parse one YAML document from ``data``; raise ``ConfigError`` if it is not valid YAML.

    An empty document parses to ``None``, as in PyYAML. ``source`` names the input in errors.
    """
    text = _decode(data, source) if isinstance(data, bytes) else data
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        # The problem alone: ``str(error)`` repeats the line with a caret, over several lines.
        problem = getattr(error, "problem", None) or str(error).partition("\n")[0]
        reason = f"not valid YAML ({_where(error)}): {problem}"
    # Not only YAMLError: PyYAML's constructors fail on some inputs with IndexError,
    # AttributeError or RecursionError (see the module docstring); all mean "bad input".
    except Exception as error:  # noqa: BLE001 - any parser failure is the document's fault
        reason = f"not valid YAML: the parser failed ({type(error).__name__}: {error})"
    else:
        reason = shape_problem(document)
        if not reason:
            return document
    raise ConfigError(source, [FieldError("", reason)])


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Read (at most ``MAX_CONFIG_BYTES``, whatever the file is) and parse the YAML file at
    ``path``; raise ``ConfigError`` if that fails."""
    data = read_limited(path, MAX_CONFIG_BYTES, hint=CONFIG_LIMIT_HINT)
    return parse_yaml(data, str(path))
