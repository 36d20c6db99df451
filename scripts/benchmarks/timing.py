"""What the benchmarks share: run an action N times and keep each run's time, and the machine line.

The benchmarks run as modules of the ``scripts.benchmarks`` package (``python -m
scripts.benchmarks.<name>``); nothing in ``agent`` imports this.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable


def _times(runs: int, action: Callable[[], object], clock: Callable[[], float]) -> list[float]:
    samples = []
    for _ in range(runs):
        started = clock()
        action()
        samples.append(clock() - started)
    return samples


def wall_times(runs: int, action: Callable[[], object]) -> list[float]:
    """Seconds of wall time (``perf_counter``) of each of ``runs`` calls of ``action``."""
    return _times(runs, action, time.perf_counter)


def cpu_times(runs: int, action: Callable[[], object]) -> list[float]:
    """Seconds of this process's CPU time (``process_time``) of each call of ``action``."""
    return _times(runs, action, time.process_time)


def machine() -> str:
    """The line every benchmark prints first, so figures are read with their machine."""
    return (
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, kernel {platform.release()}"
    )
