"""Reading a config file: YAML in, a frozen dataclass or a ``ConfigError`` with every problem."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml

from agent.config.agent import AgentConfig
from agent.config.errors import ConfigError, FieldError
from agent.config.schema import load

T = TypeVar("T")


def parse_document(cls: type[T], text: str, source: str) -> T:
    """Parse YAML text into ``cls``; raise ``ConfigError`` listing every bad field."""
    try:
        raw: Any = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        raise ConfigError(source, [FieldError("", f"not valid YAML ({where}): {error}")]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(source, [FieldError("", "the document must be a mapping")])
    value, errors = load(cls, raw)
    if errors:
        raise ConfigError(source, errors)
    return value


def load_file(cls: type[T], path: str | os.PathLike[str] | None) -> T:
    """Load ``cls`` from ``path``; with no path, every field keeps its default."""
    if path is None:
        value, errors = load(cls, {})
        if errors:  # pragma: no cover - defaults are validated by the unit tests
            raise ConfigError("<defaults>", errors)
        return value
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(str(path), [FieldError("", f"cannot read: {error.strerror}")]) from None
    return parse_document(cls, text, str(path))


def load_agent_config(
    path: str | os.PathLike[str] | None, environ: dict[str, str] | None = None
) -> AgentConfig:
    """The agent's config with ``NODE_NAME`` and ``KUBECONFIG`` from the environment on top."""
    env = os.environ if environ is None else environ
    config = load_file(AgentConfig, path)
    overridden = config.with_overrides(
        node_name=env.get("NODE_NAME") or None, kubeconfig=env.get("KUBECONFIG") or None
    )
    errors = overridden.validate() if overridden is not config else []
    if errors:
        raise ConfigError("environment", errors)
    return overridden
