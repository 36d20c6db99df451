"""When to write the NodeReport (pure): a real move, a state change, or a heartbeat.

Cheap for a 5,000-node cluster: small noise in CPU or memory never causes a write; a move
of ``threshold`` (a fraction of capacity) in node CPU or memory does; any change of the
gate, the shutdown or swap drift does, at once; otherwise one heartbeat per period, each
moved by a random part of ``jitter`` (half of it either way) so that agents started together
drift apart, while the mean stays the period: 5,000 nodes at 60 s write 83 times a second,
not more. The reader judges staleness by three periods, far beyond the longest interval.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from enum import StrEnum


class WriteReason(StrEnum):
    FIRST = "first"
    STATE = "state"
    THRESHOLD = "threshold"
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


@dataclass(frozen=True)
class Observed:
    cpu_fraction: float
    """Smoothed node CPU in use over capacity (0..1)."""
    memory_fraction: float
    state: Hashable


@dataclass(frozen=True)
class WritePolicy:
    threshold: float = 0.05
    heartbeat: float = 60.0
    jitter: float = 0.1

    def decide(
        self, last: Published | None, now: Observed, monotonic: float, *, failed: bool = False
    ) -> WriteReason | None:
        if last is None:
            return WriteReason.FIRST
        if now.state != last.state:
            return WriteReason.STATE
        if failed:
            return WriteReason.RETRY
        # A hair of tolerance: 0.35 - 0.30 is 0.04999... in binary floating point.
        threshold = self.threshold - 1e-9
        if (
            abs(now.cpu_fraction - last.cpu_fraction) >= threshold
            or abs(now.memory_fraction - last.memory_fraction) >= threshold
        ):
            return WriteReason.THRESHOLD
        if monotonic >= last.next_heartbeat:
            return WriteReason.HEARTBEAT
        return None

    def next_heartbeat(self, written_at: float, random_fraction: float) -> float:
        """``written_at`` plus the period, moved by up to half of ``jitter`` either way."""
        return written_at + self.heartbeat * (1.0 + self.jitter * (random_fraction - 0.5))
