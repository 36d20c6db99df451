"""Bytes in, one parsed YAML document out, or a ``ConfigError``: never a parser traceback.

Every file an operator hands us (the agent's config, the descheduler's policy files) goes
through here, so bad input always ends the same way: a ``ConfigError`` with a reason, exit 2.
PyYAML rejects most bad input with ``YAMLError``, but not all of it: an empty ``!!float``
raises ``IndexError`` inside the constructor, a bare ``!!timestamp`` ``AttributeError``, and
deep nesting ``RecursionError``. Whatever the parser raises on a document is the document's
fault, so any exception from it is reported as "not valid YAML". Text must be UTF-8 (an
optional byte-order mark is allowed), as YAML 1.2 and kubelet's own config loader expect.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from agent.config.errors import ConfigError, FieldError


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
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        reason = f"not valid YAML ({_where(error)}): {error}"
    # Not only YAMLError: PyYAML's constructors fail on some inputs with IndexError,
    # AttributeError or RecursionError (see the module docstring); all mean "bad input".
    except Exception as error:  # noqa: BLE001 - any parser failure is the document's fault
        reason = f"not valid YAML: the parser failed ({type(error).__name__}: {error})"
    raise ConfigError(source, [FieldError("", reason)])


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Read and parse the YAML file at ``path``; raise ``ConfigError`` if that fails."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        reason = f"cannot read: {error.strerror or error}"
        raise ConfigError(str(path), [FieldError("", reason)]) from None
    return parse_yaml(data, str(path))
