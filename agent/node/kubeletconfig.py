"""The eviction settings in kubelet's config file (a ``KubeletConfiguration`` YAML document).

Only what the swap guide's eviction check needs is read: ``evictionHard``, ``evictionSoft``
and ``mergeDefaultEvictionSettings``. Thresholds given as kubelet flags instead of in the
file are not visible here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

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


def parse_kubelet_eviction(text: str, path: Path) -> KubeletEvictionSettings:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KubeletConfigError(f"{path}: not valid YAML: {error}") from None
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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise KubeletConfigError(f"cannot read {path}: {error.strerror}") from None
    return parse_kubelet_eviction(text, path)
