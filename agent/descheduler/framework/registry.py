"""The single list of built-in plugins: name -> args type, factory, extension points.

Upstream fills its registry in ``setupplugins.go`` and derives each plugin's extension points
from its Go type (``profile.go``); here each entry says them outright. Upstream plugins we do
not implement yet are listed apart, so a policy naming one gets a clear error instead of
"unknown plugin".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.descheduler.framework.types import (
    BALANCE,
    DESCHEDULE,
    FILTER,
    PRE_EVICTION_FILTER,
    PluginFactory,
)
from agent.descheduler.plugins.defaultevictor import DefaultEvictor, DefaultEvictorArgs
from agent.descheduler.plugins.nodeutilization.highnodeutilization import (
    HighNodeUtilization,
    HighNodeUtilizationArgs,
)
from agent.descheduler.plugins.nodeutilization.lownodeutilization import (
    LowNodeUtilization,
    LowNodeUtilizationArgs,
)
from agent.descheduler.plugins.removeduplicates import RemoveDuplicates, RemoveDuplicatesArgs
from agent.descheduler.plugins.removepodsviolatinginterpodantiaffinity import (
    RemovePodsViolatingInterPodAntiAffinity,
    RemovePodsViolatingInterPodAntiAffinityArgs,
)
from agent.descheduler.plugins.removepodsviolatingnodeaffinity import (
    RemovePodsViolatingNodeAffinity,
    RemovePodsViolatingNodeAffinityArgs,
)
from agent.descheduler.plugins.removepodsviolatingnodetaints import (
    RemovePodsViolatingNodeTaints,
    RemovePodsViolatingNodeTaintsArgs,
)
from agent.descheduler.plugins.removepodsviolatingtopologyspreadconstraint import (
    RemovePodsViolatingTopologySpreadConstraint,
    RemovePodsViolatingTopologySpreadConstraintArgs,
)


@dataclass(frozen=True)
class PluginSpec:
    name: str
    args_type: type[Any]
    factory: PluginFactory
    extension_points: frozenset[str]


def _spec(name: str, args_type: type[Any], factory: PluginFactory, *points: str) -> PluginSpec:
    return PluginSpec(name, args_type, factory, frozenset(points))


REGISTRY: Mapping[str, PluginSpec] = {
    spec.name: spec
    for spec in (
        _spec("DefaultEvictor", DefaultEvictorArgs, DefaultEvictor, FILTER, PRE_EVICTION_FILTER),
        _spec("LowNodeUtilization", LowNodeUtilizationArgs, LowNodeUtilization, BALANCE),
        _spec("HighNodeUtilization", HighNodeUtilizationArgs, HighNodeUtilization, BALANCE),
        _spec("RemoveDuplicates", RemoveDuplicatesArgs, RemoveDuplicates, BALANCE),
        _spec(
            "RemovePodsViolatingInterPodAntiAffinity",
            RemovePodsViolatingInterPodAntiAffinityArgs,
            RemovePodsViolatingInterPodAntiAffinity,
            DESCHEDULE,
        ),
        _spec(
            "RemovePodsViolatingNodeAffinity",
            RemovePodsViolatingNodeAffinityArgs,
            RemovePodsViolatingNodeAffinity,
            DESCHEDULE,
        ),
        _spec(
            "RemovePodsViolatingNodeTaints",
            RemovePodsViolatingNodeTaintsArgs,
            RemovePodsViolatingNodeTaints,
            DESCHEDULE,
        ),
        _spec(
            "RemovePodsViolatingTopologySpreadConstraint",
            RemovePodsViolatingTopologySpreadConstraintArgs,
            RemovePodsViolatingTopologySpreadConstraint,
            BALANCE,
        ),
    )
}

NOT_YET_IMPLEMENTED = frozenset(
    {
        "PodLifeTime",
        "RemoveFailedPods",
        "RemovePodsHavingTooManyRestarts",
    }
)
"""Upstream v0.36 plugins this version does not implement (yet)."""


def unknown_reason(name: str) -> str:
    if name in NOT_YET_IMPLEMENTED:
        return f"plugin {name!r} is an upstream plugin this version does not implement yet"
    return f"unknown plugin {name!r} (known: {', '.join(sorted(REGISTRY))})"
