"""A policy profile, resolved: which plugins run at each extension point, with which args.

Upstream's ``setDefaultEvictor`` puts DefaultEvictor first at ``filter`` and
``preEvictionFilter`` when a profile does not enable it, and gives it default args; the
``disabled`` lists then remove names from ``enabled`` (DefaultEvictor stays, as upstream
re-adds it). Args of a plugin without a ``pluginConfig`` entry are the args type's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.descheduler.core.framework.types import EXTENSION_POINTS, FILTER, PRE_EVICTION_FILTER

DEFAULT_EVICTOR = "DefaultEvictor"


@dataclass(frozen=True)
class Profile:
    name: str
    enabled: Mapping[str, tuple[str, ...]]
    """Extension point -> plugin names, in the policy's order."""
    args: Mapping[str, Any]
    """Plugin name -> its validated args."""

    def plugins_at(self, point: str) -> tuple[str, ...]:
        return self.enabled.get(point, ())


def resolve_enabled(
    enabled: Mapping[str, tuple[str, ...]], disabled: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    resolved: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        names = [n for n in enabled.get(point, ()) if n not in disabled.get(point, ())]
        if point in (FILTER, PRE_EVICTION_FILTER) and DEFAULT_EVICTOR not in names:
            names.insert(0, DEFAULT_EVICTOR)
        resolved[point] = tuple(dict.fromkeys(names))
    return resolved
