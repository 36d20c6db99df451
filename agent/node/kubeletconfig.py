"""The eviction settings in kubelet's config file (a ``KubeletConfiguration`` YAML document).

Only what the swap guide's eviction check needs is read: ``evictionHard``, ``evictionSoft``
and ``mergeDefaultEvictionSettings``. Thresholds given as kubelet flags instead of in the
file are not visible here. The file is read as every config file is (``agent.config``'s
bounded read and YAML reader): a parser failure is a ``KubeletConfigError``, never a
traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.config.boundedread import CONFIG_LIMIT_HINT, MAX_CONFIG_BYTES, read_limited
from agent.config.errors import ConfigError
from agent.config.yamlfile import parse_yaml

KIND = "KubeletConfiguration"


class KubeletConfigError(Exception):
    """The kubelet config file could not be read or is not a KubeletConfiguration."""


@dataclass(frozen=True)
class KubeletEvictionSettings:
    path: str
    eviction_hard: Mapping[str, str] | None
    """``None`` when the file does not set it (kubelet then applies its defaults)."""
    eviction_soft: Mapping[str, str] | None
    merge_defaults: bool


def _thresholds(document: Mapping[str, Any], key: str, path: Path) -> Mapping[str, str] | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise KubeletConfigError(f"{path}: {key} must map signals to strings like 100Mi or 5%")
    return {str(signal): threshold for signal, threshold in value.items()}


def _said(error: ConfigError) -> str:
    return "; ".join(str(each) for each in error.errors)


def parse_kubelet_eviction(text: str | bytes, path: Path) -> KubeletEvictionSettings:
    try:
        document = parse_yaml(text, str(path))
    except ConfigError as error:
        raise KubeletConfigError(f"{path}: {_said(error)}") from None
    if not isinstance(document, Mapping):
        raise KubeletConfigError(f"{path}: not a KubeletConfiguration (not a mapping)")
    kind = document.get("kind")
    if kind is not None and kind != KIND:
        raise KubeletConfigError(f"{path}: kind is {kind!r}, expected {KIND}")
    merge = document.get("mergeDefaultEvictionSettings", False)
    return KubeletEvictionSettings(
        path=str(path),
        eviction_hard=_thresholds(document, "evictionHard", path),
        eviction_soft=_thresholds(document, "evictionSoft", path),
        merge_defaults=merge is True,
    )


def read_kubelet_eviction(path: Path) -> KubeletEvictionSettings:
    """Read with the config files' bounds (``agent.config.boundedread``) and YAML reader."""
    try:
        data = read_limited(path, MAX_CONFIG_BYTES, hint=CONFIG_LIMIT_HINT)
    except ConfigError as error:
        reason = _said(error).removeprefix("cannot read: ")
        raise KubeletConfigError(f"cannot read {path}: {reason}") from None
    return parse_kubelet_eviction(data, path)
