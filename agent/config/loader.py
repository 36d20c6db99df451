"""Reading a config file: YAML in, a frozen dataclass or a ``ConfigError`` with every problem."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from agent.config.agent import AgentConfig
from agent.config.errors import ConfigError, FieldError
from agent.config.schema import load, load_layers
from agent.config.yamlfile import parse_yaml, read_yaml

T = TypeVar("T")


def parse_document(cls: type[T], text: str | bytes, source: str) -> T:
    """Parse a YAML document into ``cls``; raise ``ConfigError`` listing every bad field."""
    return _from_yaml(cls, parse_yaml(text, source), source)


def _from_yaml(cls: type[T], raw: Any, source: str) -> T:
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
    return _from_yaml(cls, read_yaml(path), str(path))


def load_with_flags(
    cls: type[T],
    path: str | os.PathLike[str] | None,
    flags: Mapping[str, Any],
    *,
    flags_source: str,
) -> T:
    """``cls`` from ``path`` (or defaults), the flags given over it, validated once; raise
    ``ConfigError`` naming every bad key and every bad flag (``flags_source`` says where the
    flags came from in its heading)."""
    raw = {} if path is None else read_yaml(path)
    source = flags_source if path is None else f"{path} and {flags_source}"
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(str(path), [FieldError("", "the document must be a mapping")])
    value, errors = load_layers(cls, raw, flags)
    if errors:
        raise ConfigError(source, errors)
    return value


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
