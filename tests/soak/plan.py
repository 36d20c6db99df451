"""What one soak scenario does, drawn from its seed before anything runs.

A scenario is plain data: the shutdown buckets, the pods, when the node's critical pod
becomes ready, when logind is asked to power off, how its poweroff job ends, and a list of
faults at times relative to the moment the agent first holds its lock. Drawing it all up
front from ``random.Random(f"{seed}:{index}")`` is what makes a run replayable: the same
seed and index give the same plan, whatever ran before it or beside it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

PodBehaviour = Literal["normal", "stuck", "instant"]
JobEnd = Literal["never", "cancel"]

FAULT_KINDS = (
    "logind-restart",
    "logind-restart-wiped",
    "agent-kill",
    "api-unreachable",
    "api-500",
    "api-503",
    "api-429",
    "api-slow",
    "watch-cut",
    "compaction-410",
)
"""Faults drawn at random times. Pods that never end or end at once, pods added during the
shutdown, the foreign writer and cancelled shutdowns are part of every plan's shape and are
counted separately (see ``Scenario.shape_counts``)."""

API_FAULTS = frozenset({"api-unreachable", "api-500", "api-503", "api-429", "api-slow"})

PRIORITIES = (0, 500, 1000, 5000, 2_000_000_000)
CRITICAL_PRIORITY = 2_000_000_000


@dataclass(frozen=True)
class PodPlan:
    name: str
    priority: int
    grace: int
    behaviour: PodBehaviour
    added_after_power_off: float | None = None
    """Seconds after the power-off request; ``None``: on the node from the start."""


@dataclass(frozen=True)
class Fault:
    kind: str
    at: float
    """Seconds after the agent first held its lock."""
    duration: float = 0.0
    """How long an API fault lasts; for ``agent-kill``, how long the agent stays down."""
    hang: float = 0.0
    """``api-slow`` only: how long each request is held before it is served."""


@dataclass(frozen=True)
class Scenario:
    seed: int
    index: int
    buckets: tuple[tuple[int, int], ...]
    mode: Literal["delete", "evict"]
    time_scale: float
    pods: tuple[PodPlan, ...]
    ready_at: float
    """When the critical DaemonSet pod turns Ready (seconds after the first lock)."""
    flaps_after_ready: tuple[float, ...]
    """Moments the critical pod turns unready and ready again after it first was (pairs)."""
    power_off_at: float
    job_end: JobEnd
    cancel_delay: float
    """Seconds between logind's StartUnit and the job's end when ``job_end`` is cancel."""
    power_off_again_after: float | None
    """After a cancellation: seconds until the second PowerOff (``None``: no second one)."""
    short_logind_delay: bool
    """logind's InhibitDelayMaxSec below the budget and not raised: logind stops waiting early."""
    faults: tuple[Fault, ...] = field(default=())

    @property
    def budget(self) -> int:
        return sum(seconds for _, seconds in self.buckets)

    @property
    def replay(self) -> str:
        return f"scripts/soak --runs 1 --seed {self.seed} --scenario {self.index}"

    def shape_counts(self) -> dict[str, int]:
        """Injected conditions that are part of the plan's shape, not timed faults (what
        actually happened, such as cancellations, is counted by the run)."""
        counts = {
            "pod-stuck": sum(1 for p in self.pods if p.behaviour == "stuck"),
            "pod-instant": sum(1 for p in self.pods if p.behaviour == "instant"),
            "pod-added-mid-shutdown": sum(
                1 for p in self.pods if p.added_after_power_off is not None
            ),
            "short-logind-delay": 1 if self.short_logind_delay else 0,
        }
        return {kind: count for kind, count in counts.items() if count}


def draw(seed: int, index: int) -> Scenario:
    """The plan of scenario ``index`` of a soak started with ``seed``."""
    rng = random.Random(f"{seed}:{index}")  # noqa: S311 - reproducible test input, not crypto
    buckets = ((0, rng.choice((1, 1, 2))), (1000, 1), (CRITICAL_PRIORITY, 1))
    budget = sum(seconds for _, seconds in buckets)
    pods = tuple(_pod(rng, n) for n in range(rng.randint(3, 7)))
    pods += tuple(
        _pod(rng, n, added=round(rng.uniform(0.0, budget), 3))
        for n in range(len(pods), len(pods) + rng.randint(0, 2))
    )
    ready_at = round(rng.uniform(0.1, 1.5), 3)
    power_off_at = round(max(0.3, ready_at + rng.uniform(-0.6, 0.8)), 3)
    flaps: tuple[float, ...] = ()
    if rng.random() < 0.4:
        down = round(ready_at + rng.uniform(0.2, 1.5), 3)
        flaps = (down, round(down + rng.uniform(0.1, 0.8), 3))
    job_end: JobEnd = rng.choice(("never", "cancel"))
    again = round(rng.uniform(0.3, 1.0), 3) if job_end == "cancel" and rng.random() < 0.5 else None
    faults = tuple(
        sorted(
            (_fault(rng, power_off_at, budget) for _ in range(rng.randint(1, 4))),
            key=lambda f: f.at,
        )
    )
    return Scenario(
        seed=seed,
        index=index,
        buckets=buckets,
        mode="evict" if rng.random() < 0.25 else "delete",
        time_scale=round(rng.uniform(0.2, 1.2), 3),
        pods=pods,
        ready_at=ready_at,
        flaps_after_ready=flaps,
        power_off_at=power_off_at,
        job_end=job_end,
        cancel_delay=round(rng.uniform(0.05, 1.0), 3),
        power_off_again_after=again,
        short_logind_delay=rng.random() < 0.2,
        faults=faults,
    )


def _pod(rng: random.Random, n: int, added: float | None = None) -> PodPlan:
    behaviour: PodBehaviour = rng.choices(("normal", "stuck", "instant"), (6, 2, 2))[0]
    grace = 1 if behaviour == "instant" else rng.randint(1, 10)
    return PodPlan(
        name=f"pod-{n}",
        priority=rng.choice(PRIORITIES),
        grace=grace,
        behaviour=behaviour,
        added_after_power_off=added,
    )


def _fault(rng: random.Random, power_off_at: float, budget: int) -> Fault:
    kind = rng.choice(FAULT_KINDS)
    # Two in three faults land during the shutdown, the rest while the readiness gate waits.
    if rng.random() < 2 / 3:
        at = power_off_at + rng.uniform(-0.2, budget + 0.3)
    else:
        at = rng.uniform(0.0, max(0.1, power_off_at))
    at = round(max(0.0, at), 3)
    if kind == "agent-kill":
        return Fault(kind, at, duration=round(rng.uniform(0.05, 1.0), 3))
    if kind in API_FAULTS:
        hang = round(rng.uniform(1.0, 3.0), 3) if kind == "api-slow" else 0.0
        return Fault(kind, at, duration=round(rng.uniform(0.2, 2.0), 3), hang=hang)
    return Fault(kind, at)
