"""Ours on Prometheus as upstream's shadow: the same evictions per cycle, from the same nodes?

With upstream's own policy (``metricsUtilization.source: Prometheus``, ``MetricResource``
thresholds) upstream v0.36 has no pod usage, so it evicts at most one pod per node over the
target per cycle. Ours, reading the same Prometheus with the policy unchanged, should decide
the same. Two separate runs cannot show it: after the first cycle their clusters part (which
pods went, where the replacements landed, when Prometheus scraped). So ours runs beside
upstream on the same cluster and the same Prometheus, as a shadow: ``--dry-run --output
json`` (it plans and prints each cycle's plan, one JSON document per cycle, and writes
nothing), with the same ``--descheduling-interval``, started right after upstream, so each
of its cycles falls a moment after one of upstream's.

Here (pure): upstream's cycles out of its log (klog: each ``"Evicted pod" ... node="N"``
line, and the cycle's closing ``"Number of evictions/requests"`` line with its time), ours'
out of its printed plans (stamped by the benchmark as each arrives; an eviction a budget
refuses is left to the next cycle, so it is not counted), each upstream cycle paired with
the cycle of ours nearest to it in time, within half the descheduling interval (each of
ours paired once). Nearest, not "the next after": upstream's cycle is stamped when it ends,
after its evictions (a few seconds at its 5 QPS), while it read Prometheus when it began, so
ours planning just before that end read the same scrape; the figures are the
largest ``|ours - upstream|`` in a pair and the share of upstream's ``(cycle, node)``
evictions ours planned in the paired cycle, with the misses named.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TOLERANCE = 1
"""Evictions per paired cycle may differ by this much."""

_KLOG = re.compile(r"^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d+)\s")
_EVICTED = re.compile(r'"Evicted pod" .*\bnode="([^"]+)"')
CYCLE_END = '"Number of evictions/requests"'
"""The line upstream's descheduler logs at the end of each cycle (``descheduler.go``)."""


@dataclass(frozen=True)
class Cycle:
    t: float
    """When the cycle ended, in seconds from the run's start."""
    nodes: tuple[str, ...]
    """One entry per eviction: the node the pod was evicted from (sorted)."""

    @property
    def evictions(self) -> int:
        return len(self.nodes)


def klog_time(line: str, reference: float) -> float | None:
    """A klog line's wall-clock time (``I1128 20:47:29.339697``: local time, no year), the
    year taken from ``reference`` (wall clock) and moved by one when that lands it more than
    half a year away (a run across New Year); ``None`` for a line without the header."""
    found = _KLOG.match(line)
    if found is None:
        return None
    month, day, hour, minute, second, fraction = found.groups()
    year = time.localtime(reference).tm_year
    best: float | None = None
    for candidate_year in (year - 1, year, year + 1):
        try:
            fields = (candidate_year, int(month), int(day), int(hour), int(minute), int(second))
            stamp = time.mktime((*fields, 0, 0, -1))
        except (OverflowError, ValueError):
            continue
        if best is None or abs(stamp - reference) < abs(best - reference):
            best = stamp
    return None if best is None else best + float(f"0.{fraction}")


def upstream_cycles(log_text: str, origin_wall: float) -> list[Cycle]:
    """Upstream's cycles out of its log, in order; ``t`` from ``origin_wall``."""
    cycles: list[Cycle] = []
    nodes: list[str] = []
    for line in log_text.splitlines():
        if evicted := _EVICTED.search(line):
            nodes.append(evicted.group(1))
        elif CYCLE_END in line:
            stamp = klog_time(line, origin_wall)
            if stamp is not None:
                cycles.append(Cycle(round(stamp - origin_wall, 2), tuple(sorted(nodes))))
            nodes = []
    return cycles


def ours_cycle(plan: Mapping[str, Any], t: float) -> Cycle:
    """One of ours' dry-run plans (``Plan.as_json``) printed at ``t``: the evictions it would
    send (a budget's refusal, ``blockedByPDB`` and not ``held``, waits for the next cycle)."""
    nodes = [
        str(e["node"])
        for e in plan.get("evictions") or []
        if not (e.get("blockedByPDB") and not e.get("held"))
    ]
    return Cycle(round(t, 2), tuple(sorted(nodes)))


def json_documents(buffer: str) -> Iterator[tuple[dict[str, Any], int]]:
    """The complete JSON objects at the head of ``buffer`` (ours prints one per cycle, one
    after the other), each with the offset just past it; stops at an incomplete one."""
    decoder = json.JSONDecoder()
    offset = 0
    while True:
        start = offset
        while start < len(buffer) and buffer[start].isspace():
            start += 1
        if start >= len(buffer):
            return
        try:
            document, end = decoder.raw_decode(buffer, start)
        except json.JSONDecodeError:
            return
        offset = end
        if isinstance(document, dict):
            yield document, offset


@dataclass(frozen=True)
class Pair:
    upstream: Cycle
    ours: Cycle | None
    """``None``: ours had no cycle between this one of upstream's and the next."""

    @property
    def difference(self) -> int:
        return abs((self.ours.evictions if self.ours else 0) - self.upstream.evictions)

    def missed(self) -> list[str]:
        """Upstream's nodes (one per eviction) ours did not plan in this cycle."""
        left = Counter(self.upstream.nodes)
        left.subtract(Counter(self.ours.nodes if self.ours else ()))
        return sorted(left.elements())


def pair(upstream: Sequence[Cycle], ours: Sequence[Cycle], window: float) -> list[Pair]:
    """Each upstream cycle with the cycle of ours nearest to it in time, at most ``window``
    seconds away (half the descheduling interval), each of ours in one pair at most."""
    out = []
    taken: set[int] = set()
    for theirs in upstream:
        near = [
            (abs(mine.t - theirs.t), index)
            for index, mine in enumerate(ours)
            if index not in taken and abs(mine.t - theirs.t) <= window
        ]
        if not near:
            out.append(Pair(theirs, None))
            continue
        _, index = min(near)
        taken.add(index)
        out.append(Pair(theirs, ours[index]))
    return out


@dataclass(frozen=True)
class Parity:
    cycles: int
    """Upstream's cycles compared."""
    largest_difference: int
    """The largest ``|ours - upstream|`` evictions in a paired cycle."""
    same_nodes: float | None
    """Of upstream's ``(cycle, node)`` evictions, the share (%) ours planned in the paired
    cycle too (``None``: upstream evicted nothing)."""
    misses: tuple[str, ...]
    """``cycle K: node`` for each of upstream's evictions ours did not plan (K from 1)."""
    unpaired: int
    """Upstream's cycles ours had no cycle for."""
    median_lag: float | None
    """Ours' cycle minus upstream's cycle end (s; below zero: ours planned first), the
    median over the pairs."""
    ours: tuple[int, ...]
    upstream: tuple[int, ...]

    @property
    def within(self) -> bool:
        return self.largest_difference <= TOLERANCE


def compare(upstream: Sequence[Cycle], ours: Sequence[Cycle], window: float) -> Parity:
    pairs = pair(upstream, ours, window)
    wanted = sum(p.upstream.evictions for p in pairs)
    misses = tuple(
        f"cycle {index}: {node}" for index, p in enumerate(pairs, 1) for node in p.missed()
    )
    lags = sorted(p.ours.t - p.upstream.t for p in pairs if p.ours is not None)
    return Parity(
        cycles=len(pairs),
        largest_difference=max((p.difference for p in pairs), default=0),
        same_nodes=100.0 * (wanted - len(misses)) / wanted if wanted else None,
        misses=misses,
        unpaired=sum(1 for p in pairs if p.ours is None),
        median_lag=round(lags[len(lags) // 2], 2) if lags else None,
        ours=tuple(p.ours.evictions if p.ours else 0 for p in pairs),
        upstream=tuple(p.upstream.evictions for p in pairs),
    )


def cycles_of(records: Sequence[Mapping[str, Any]]) -> list[Cycle]:
    """Cycles read back from a run's record (``{"t": ..., "nodes": [...]}`` each)."""
    return [Cycle(float(c["t"]), tuple(c["nodes"])) for c in records]


def describe_counts(counts: Sequence[int], limit: int = 12) -> str:
    """``3, 2, 2, 1 ...`` (the first ``limit`` cycles), or ``none``."""
    if not counts:
        return "none"
    shown = ", ".join(str(c) for c in counts[:limit])
    return shown + (f" ... ({len(counts)} cycles)" if len(counts) > limit else "")
