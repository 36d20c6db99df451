"""The single list of built-in plugins: name -> args type, factory, extension points.

Upstream fills its registry in ``setupplugins.go`` and derives each plugin's extension points
from its Go type (``profile.go``); here each entry says them outright. Every upstream v0.36
plugin is here, and two of ours (CriticalAddonRescue, NodeShutdownRecovery).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.descheduler.core.framework.types import (
    BALANCE,
    DESCHEDULE,
    FILTER,
    PRE_EVICTION_FILTER,
    PluginFactory,
)
from agent.descheduler.core.plugins.criticaladdonrescue import (
    CriticalAddonRescue,
    CriticalAddonRescueArgs,
)
from agent.descheduler.core.plugins.defaultevictor import DefaultEvictor, DefaultEvictorArgs
from agent.descheduler.core.plugins.nodeshutdownrecovery import (
    NodeShutdownRecovery,
    NodeShutdownRecoveryArgs,
)
from agent.descheduler.core.plugins.nodeutilization.highnodeutilization import (
    HighNodeUtilization,
    HighNodeUtilizationArgs,
)
from agent.descheduler.core.plugins.nodeutilization.lownodeutilization import (
    LowNodeUtilization,
    LowNodeUtilizationArgs,
)
from agent.descheduler.core.plugins.podlifetime import PodLifeTime, PodLifeTimeArgs
from agent.descheduler.core.plugins.removeduplicates import RemoveDuplicates, RemoveDuplicatesArgs
from agent.descheduler.core.plugins.removefailedpods import RemoveFailedPods, RemoveFailedPodsArgs
from agent.descheduler.core.plugins.removepodshavingtoomanyrestarts import (
    RemovePodsHavingTooManyRestarts,
    RemovePodsHavingTooManyRestartsArgs,
)
from agent.descheduler.core.plugins.removepodsviolatinginterpodantiaffinity import (
    RemovePodsViolatingInterPodAntiAffinity,
    RemovePodsViolatingInterPodAntiAffinityArgs,
)
from agent.descheduler.core.plugins.removepodsviolatingnodeaffinity import (
    RemovePodsViolatingNodeAffinity,
    RemovePodsViolatingNodeAffinityArgs,
)
from agent.descheduler.core.plugins.removepodsviolatingnodetaints import (
    RemovePodsViolatingNodeTaints,
    RemovePodsViolatingNodeTaintsArgs,
)
from agent.descheduler.core.plugins.removepodsviolatingtopologyspreadconstraint import (
    RemovePodsViolatingTopologySpreadConstraint,
    RemovePodsViolatingTopologySpreadConstraintArgs,
)


@dataclass(frozen=True)
class PluginSpec:
    name: str
    args_type: type[Any]
    factory: PluginFactory
    extension_points: frozenset[str]
    reads_pod_status: bool = False
    """Reads the pod-state details (``podstatus``: restarts, container states, conditions).
    When no enabled plugin does, the pod cache leaves them out (cheaper to fill, smaller)."""


def _spec(
    name: str,
    args_type: type[Any],
    factory: PluginFactory,
    *points: str,
    reads_pod_status: bool = False,
) -> PluginSpec:
    return PluginSpec(name, args_type, factory, frozenset(points), reads_pod_status)


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
        _spec("CriticalAddonRescue", CriticalAddonRescueArgs, CriticalAddonRescue, BALANCE),
        _spec(
            "NodeShutdownRecovery",
            NodeShutdownRecoveryArgs,
            NodeShutdownRecovery,
            DESCHEDULE,
        ),
        _spec("PodLifeTime", PodLifeTimeArgs, PodLifeTime, DESCHEDULE, reads_pod_status=True),
        _spec(
            "RemoveFailedPods",
            RemoveFailedPodsArgs,
            RemoveFailedPods,
            DESCHEDULE,
            reads_pod_status=True,
        ),
        _spec(
            "RemovePodsHavingTooManyRestarts",
            RemovePodsHavingTooManyRestartsArgs,
            RemovePodsHavingTooManyRestarts,
            DESCHEDULE,
            reads_pod_status=True,
        ),
    )
}


def reads_pod_status(enabled: Iterable[Mapping[str, tuple[str, ...]]]) -> bool:
    """Whether any plugin enabled at any extension point (one mapping per profile) reads
    the pod-state details."""
    return any(
        REGISTRY[name].reads_pod_status
        for points in enabled
        for names in points.values()
        for name in names
        if name in REGISTRY
    )


def unknown_reason(name: str) -> str:
    return f"unknown plugin {name!r} (known: {', '.join(sorted(REGISTRY))})"
