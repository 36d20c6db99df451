"""Argument types several plugins share, with upstream's validation rules.

Upstream repeats ``Namespaces`` (and its include-or-exclude rule), ``LabelSelector`` and the
thresholds checks in ``pkg/api`` and each plugin's ``validation.go``; here each lives once, as
a frozen dataclass the config loader fills (so every bad field is reported with its path).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.kubesemantics.labelselector import Selector, SelectorError, from_label_selector

MIN_PERCENTAGE = 0.0
MAX_PERCENTAGE = 100.0


@dataclass(frozen=True)
class IncludeOrExclude:
    """``include`` or ``exclude`` (never both, as upstream's ``validateNamespaces`` and its
    owner-kinds check); what an entry names is the subclass's."""

    include: tuple[str, ...] = setting(factory=tuple)
    exclude: tuple[str, ...] = setting(factory=tuple)

    def validate(self) -> list[FieldError]:
        if self.include and self.exclude:
            return [FieldError("", "only one of include and exclude can be set")]
        return []


@dataclass(frozen=True)
class Namespaces(IncludeOrExclude):
    """Namespaces by ``include`` or ``exclude``."""

    def admits(self, namespace: str) -> bool:
        if self.include:
            return namespace in self.include
        return namespace not in self.exclude


@dataclass(frozen=True)
class LabelSelectorRequirement:
    key: str = setting("")
    operator: str = setting("")
    values: tuple[str, ...] = setting(factory=tuple)


@dataclass(frozen=True)
class LabelSelector:
    """``metav1.LabelSelector``; checked with the same parser that later matches it."""

    match_labels: Mapping[str, str] = setting(factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = setting(factory=tuple)

    def as_json(self) -> dict[str, Any]:
        return {
            "matchLabels": dict(self.match_labels),
            "matchExpressions": [
                {"key": e.key, "operator": e.operator, "values": list(e.values)}
                for e in self.match_expressions
            ],
        }

    def compiled(self) -> Selector:
        selector = from_label_selector(self.as_json())
        return selector or ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def validate(self) -> list[FieldError]:
        try:
            self.compiled()
        except SelectorError as error:
            return [FieldError("", str(error))]
        return []


def threshold_errors(thresholds: Mapping[str, float], key: str) -> list[FieldError]:
    """Upstream's ``validateThresholds``: non-empty, every value in [0, 100]."""
    if not thresholds:
        return [FieldError(key, "no resource threshold is configured")]
    return [
        FieldError(f"{key}.{name}", f"{name} threshold not in [0, 100] range")
        for name, percent in sorted(thresholds.items())
        if not MIN_PERCENTAGE <= percent <= MAX_PERCENTAGE
    ]
