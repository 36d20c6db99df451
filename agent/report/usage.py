"""From raw counters to usage: rates between two samples, then EWMA smoothing (pure).

CPU is cumulative, so a sample alone says nothing: the rate is the counter's growth over
the monotonic time between two samples (cores = CPU-seconds per second). Memory, swap and
pressure are levels and are taken as they are. Every value is then smoothed with
``prev*(1-w) + new*w`` (``w`` = 0.1 by default: the upstream descheduler's metrics
collector), and the latest raw value is kept beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agent.node.nodeusage import NodeCounters
from agent.node.podusage import PodCounters, PodScan


@dataclass(frozen=True)
class Sample:
    monotonic: float
    node: NodeCounters
    pods: PodScan


@dataclass(frozen=True)
class Usage:
    """One node's (or one pod's) usage; CPU in cores, the rest in bytes (or PSI percent)."""

    cpu_cores: float = 0.0
    memory_working_set: float = 0.0
    swap: float = 0.0
    pressure: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def ewma(previous: float | None, new: float, weight: float) -> float:
    return new if previous is None else previous * (1.0 - weight) + new * weight


def _rate(before: int | None, after: int | None, seconds: float, scale: float) -> float:
    if before is None or after is None or seconds <= 0 or after < before:
        return 0.0  # a reset counter (pod restarted) yields nothing rather than nonsense
    return (after - before) / scale / seconds


def node_raw(previous: Sample | None, current: Sample) -> Usage:
    node = current.node
    cpu = 0.0
    if previous is not None:
        total = node.cpu_total_ticks - previous.node.cpu_total_ticks
        busy = node.cpu_busy_ticks - previous.node.cpu_busy_ticks
        if total > 0 and busy >= 0:
            cpu = busy / total * node.cpus
    return Usage(
        cpu_cores=cpu,
        memory_working_set=float(node.memory_working_set),
        swap=float(node.swap_used),
        pressure=node.pressure,
    )


def pod_raw(previous: Sample | None, current: Sample) -> dict[str, Usage]:
    """Usage of every pod cgroup in ``current``, by UID; CPU needs the pod in both samples."""
    seconds = current.monotonic - previous.monotonic if previous is not None else 0.0
    before: Mapping[str, PodCounters] = previous.pods.pods if previous is not None else {}
    usage = {}
    for uid, counters in current.pods.pods.items():
        old = before.get(uid)
        usage[uid] = Usage(
            cpu_cores=_rate(old.cpu_usec if old else None, counters.cpu_usec, seconds, 1e6),
            memory_working_set=float(counters.memory_working_set or 0),
            swap=float(counters.swap_bytes or 0),
        )
    return usage


def smooth(previous: Usage | None, raw: Usage, weight: float) -> Usage:
    if previous is None:
        return raw
    pressure = {
        resource: {
            kind: ewma((previous.pressure.get(resource) or {}).get(kind), value, weight)
            for kind, value in values.items()
        }
        for resource, values in raw.pressure.items()
    }
    return Usage(
        cpu_cores=ewma(previous.cpu_cores, raw.cpu_cores, weight),
        memory_working_set=ewma(previous.memory_working_set, raw.memory_working_set, weight),
        swap=ewma(previous.swap, raw.swap, weight),
        pressure=pressure,
    )


@dataclass
class UsageTracker:
    """The smoothed state across samples (one per agent; loop thread only)."""

    weight: float = 0.1
    last: Sample | None = None
    node_smoothed: Usage | None = None
    node_latest: Usage | None = None
    pods_smoothed: dict[str, Usage] = field(default_factory=dict)
    samples: int = 0

    def add(self, sample: Sample) -> None:
        previous = self.last
        raw = node_raw(previous, sample)
        # The first sample has no CPU rate yet: it seeds the counters, not the averages.
        if previous is not None:
            self.node_smoothed = smooth(self.node_smoothed, raw, self.weight)
            pods = pod_raw(previous, sample)
            # A pod seen for the first time has no CPU rate yet: it joins at the next sample.
            self.pods_smoothed = {
                uid: smooth(self.pods_smoothed.get(uid), usage, self.weight)
                for uid, usage in pods.items()
                if uid in previous.pods.pods
            }
        self.node_latest = raw
        self.last = sample
        self.samples += 1

    @property
    def ready(self) -> bool:
        """Two samples taken: CPU rates exist."""
        return self.node_smoothed is not None
