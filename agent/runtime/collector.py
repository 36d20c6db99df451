"""Pausing CPython's cyclic garbage collector around a burst of acyclic allocations.

A descheduling cycle over 150,000 pods allocates hundreds of thousands of short-lived
containers (verdicts, candidate lists, plan rows) that refer to no cycle, so reference
counting frees each one as soon as it is dropped. The cyclic collector, started every 700
allocations, still walks the ones alive at the time, again and again as they age into the
older generations: a quarter of a 5,000-node cycle's CPU (against a twentieth at 1,000
nodes), which made planning time grow faster than the cluster (BENCHMARKS.md). Paused for
the burst, the collector resumes its normal schedule afterwards.

The pause is process-wide: the caches' watch threads run without the collector meanwhile,
which only delays the collection of reference cycles, and never frees anything early. A
pause restores the state it found, so a pause inside a pause leaves it off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block, then as it was (also on an error)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
