"""When to write the NodeReport (pure): a real move, a state change, or a heartbeat.

Cheap for a 5,000-node cluster: small noise in CPU or memory never causes a write; a move
of ``threshold`` (a fraction of node capacity) in node CPU or memory does, and so does the
same move by any one pod's CPU or memory (a pod's start-up burst, or its end, is in the
report before the heartbeat; a pod that comes or goes counts from or to zero); any change of
the gate, the shutdown or swap drift does, at once; otherwise one heartbeat per period, each
moved by a random part of ``jitter`` (half of it either way) so that agents started together
drift apart, while the mean stays the period: 5,000 nodes at 60 s write 83 times a second.

Writes for a usage move (node or pod) are at most one per ``min_interval`` since the last
write, so a node whose pods churn writes at most once per ``min_interval`` (15 s: 5,000
churning nodes at once would write 333 times a second, a quiet fleet stays at the heartbeat's
83); state changes are never held back. The reader judges staleness by three periods, far
beyond the longest interval.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

PodShares = Mapping[str, tuple[float, float]]
"""Each reported pod's (CPU, memory) as fractions of the node's capacity, by UID."""


class WriteReason(StrEnum):
    FIRST = "first"
    STATE = "state"
    THRESHOLD = "threshold"
    """Node CPU or memory moved."""
    POD = "pod"
    """One pod's CPU or memory moved (or a pod came or went)."""
    HEARTBEAT = "heartbeat"
    RETRY = "retry"


@dataclass(frozen=True)
class Published:
    """What the last successful write carried, as the policy compares it."""

    cpu_fraction: float
    memory_fraction: float
    state: Hashable
    at: float
    """Monotonic seconds of the write."""
    next_heartbeat: float
    pods: PodShares = field(default_factory=dict)


@dataclass(frozen=True)
class Observed:
    cpu_fraction: float
    """Smoothed node CPU in use over capacity (0..1)."""
    memory_fraction: float
    state: Hashable
    pods: PodShares = field(default_factory=dict)
    """Smoothed, as the report would carry them."""


def pod_moved(before: PodShares, now: PodShares, threshold: float) -> bool:
    """Whether any pod's CPU or memory share moved by ``threshold`` (absent counts as 0)."""
    for uid in before.keys() | now.keys():
        cpu_before, memory_before = before.get(uid, (0.0, 0.0))
        cpu_now, memory_now = now.get(uid, (0.0, 0.0))
        if abs(cpu_now - cpu_before) >= threshold or abs(memory_now - memory_before) >= threshold:
            return True
    return False


@dataclass(frozen=True)
class WritePolicy:
    threshold: float = 0.05
    heartbeat: float = 60.0
    jitter: float = 0.1
    min_interval: float = 15.0
    """Seconds after a write before a usage move (node or pod) is written again."""

    def decide(
        self, last: Published | None, now: Observed, monotonic: float, *, failed: bool = False
    ) -> WriteReason | None:
        if last is None:
            return WriteReason.FIRST
        if now.state != last.state:
            return WriteReason.STATE
        if failed:
            return WriteReason.RETRY
        if monotonic - last.at >= self.min_interval - 1e-9 and (moved := self._moved(last, now)):
            return moved
        if monotonic >= last.next_heartbeat:
            return WriteReason.HEARTBEAT
        return None

    def _moved(self, last: Published, now: Observed) -> WriteReason | None:
        """Whether node usage (``THRESHOLD``) or one pod's (``POD``) moved by the threshold."""
        # A hair of tolerance: 0.35 - 0.30 is 0.04999... in binary floating point.
        threshold = self.threshold - 1e-9
        if (
            abs(now.cpu_fraction - last.cpu_fraction) >= threshold
            or abs(now.memory_fraction - last.memory_fraction) >= threshold
        ):
            return WriteReason.THRESHOLD
        if pod_moved(last.pods, now.pods, threshold):
            return WriteReason.POD
        return None

    def next_heartbeat(self, written_at: float, random_fraction: float) -> float:
        """``written_at`` plus the period, moved by up to half of ``jitter`` either way."""
        return written_at + self.heartbeat * (1.0 + self.jitter * (random_fraction - 0.5))
