"""The implicit rollout budget, measured: how much of a Deployment without a PDB was evicted
and not yet replaced at worst (pure).

A Deployment's own rollout never has more than its ``maxUnavailable`` (25 % by default) of
its replicas down; a descheduler that evicts more of a Deployment that has no
PodDisruptionBudget at once takes away more than the Deployment's owner ever agreed to lose.
So, per Deployment without a PDB, the benchmark follows every eviction and every Ready
replacement as the pod watch shows them (not at a sampling interval, which would miss a peak
between two samples):

- an eviction (a pod the API server marked ``DisruptionTarget`` for the eviction API) makes
  one more pod "evicted and not yet replaced";
- a pod of the Deployment turning Ready for the first time replaces one of them, if any is
  outstanding (a pod that turns Ready with nothing outstanding banks nothing).

The peak of ``outstanding / replicas`` over the run is the figure; it stayed within the
implicit budget when it is at most ``DEFAULT_MAX_UNAVAILABLE``. Events at the same instant
are taken in the order the watch delivered them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

DEFAULT_MAX_UNAVAILABLE = 0.25
"""A Deployment's rolling update ``maxUnavailable`` when it sets none."""
EVICTED: Literal["evicted"] = "evicted"
READY: Literal["ready"] = "ready"


@dataclass(frozen=True)
class RolloutEvent:
    t: float
    """Seconds since the descheduler started."""
    kind: Literal["evicted", "ready"]
    deployment: str
    """``namespace/name``."""
    pod: str


@dataclass(frozen=True)
class Peak:
    """A Deployment's worst moment (the first time it reached its peak)."""

    deployment: str
    replicas: int
    outstanding: int
    """Pods evicted and not yet replaced at the peak."""
    t: float | None
    """When the peak was first reached (``None``: nothing was ever outstanding)."""

    @property
    def ratio(self) -> float:
        return self.outstanding / self.replicas if self.replicas else 0.0

    @property
    def within(self) -> bool:
        return self.ratio <= DEFAULT_MAX_UNAVAILABLE


def peaks(events: Iterable[RolloutEvent], replicas: Mapping[str, int]) -> dict[str, Peak]:
    """Each Deployment of ``replicas`` (those without a PDB, with their replica counts) at
    its worst; events of other Deployments are ignored."""
    outstanding = dict.fromkeys(replicas, 0)
    worst = {name: Peak(name, count, 0, None) for name, count in replicas.items()}
    for event in sorted(events, key=lambda e: e.t):  # stable: the watch's order within a tie
        name = event.deployment
        if name not in outstanding:
            continue
        if event.kind == EVICTED:
            outstanding[name] += 1
            if outstanding[name] > worst[name].outstanding:
                worst[name] = Peak(name, replicas[name], outstanding[name], event.t)
        elif outstanding[name] > 0:
            outstanding[name] -= 1
    return worst


def worst_of(found: Mapping[str, Peak]) -> Peak | None:
    """The Deployment with the highest peak ratio (the earliest on a tie); ``None`` when
    there is no Deployment without a PDB."""
    ranked = sorted(found.values(), key=lambda p: (-p.ratio, p.t if p.t is not None else 0.0))
    return ranked[0] if ranked else None
