"""Ours on Prometheus beside upstream on Prometheus: the same evictions per cycle? (pure)

With upstream's own policy (``metricsUtilization.source: Prometheus``, ``MetricResource``
thresholds) upstream v0.36 has no pod usage, so it evicts at most one pod per node over the
target per cycle. Ours, reading the same Prometheus with the policy unchanged, should do the
same: per cycle as many evictions as upstream's (within one: the nodes' figures move with
the noise between the two runs), from the same nodes in the first cycle, where both start
from the same layout and the same usage.

Cycles are the bursts of ``measures.eviction_cycles`` in each run's record, paired in order
(a cycle one run has and the other lacks counts as none there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

TOLERANCE = 1
"""Evictions per cycle may differ by this much."""


@dataclass(frozen=True)
class Parity:
    cycles: int
    """Cycles compared (the longer run's count)."""
    largest_difference: int
    """The largest ``|ours - upstream|`` evictions in one cycle."""
    first_cycle_same_nodes: float | None
    """Of the nodes upstream evicted from in its first cycle, the share (%) ours evicted
    from in its first cycle too (``None``: upstream evicted nothing)."""
    ours: tuple[int, ...]
    upstream: tuple[int, ...]

    @property
    def within(self) -> bool:
        return self.largest_difference <= TOLERANCE


def compare(ours: Sequence[Mapping[str, Any]], upstream: Sequence[Mapping[str, Any]]) -> Parity:
    """Two runs' ``cycles`` (each ``{"evictions": n, "nodes": [...]}``), paired in order."""
    ours_counts = tuple(int(c["evictions"]) for c in ours)
    upstream_counts = tuple(int(c["evictions"]) for c in upstream)
    pairs = list(zip_longest(ours_counts, upstream_counts, fillvalue=0))
    same: float | None = None
    if upstream:
        wanted = set(upstream[0]["nodes"])
        got = set(ours[0]["nodes"]) if ours else set()
        same = 100.0 * len(wanted & got) / len(wanted) if wanted else None
    return Parity(
        cycles=len(pairs),
        largest_difference=max((abs(a - b) for a, b in pairs), default=0),
        first_cycle_same_nodes=same,
        ours=ours_counts,
        upstream=upstream_counts,
    )


def describe_counts(counts: Sequence[int], limit: int = 12) -> str:
    """``3, 2, 2, 1 ...`` (the first ``limit`` cycles), or ``none``."""
    if not counts:
        return "none"
    shown = ", ".join(str(c) for c in counts[:limit])
    return shown + (f" ... ({len(counts)} cycles)" if len(counts) > limit else "")
