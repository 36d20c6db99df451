"""Machine-readable benchmark results: one JSON file per benchmark, read by ``render.py``.

Why a file per benchmark: ``scripts/bench --only NAME`` reruns one benchmark and the
renderer still shows every figure, each with the date and machine of the run that produced
it. A figure carries its median, min and max (over runs, or over a long run's windows), its
target and its same-run baseline; whether it met its target is computed here from the
numbers, and a miss carries the one-line reason the benchmark emitted from its own data.
Nothing in BENCHMARKS.md is typed by hand.

The benchmarks import it as ``scripts.benchmarks.results``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
ROOT = Path(__file__).resolve().parents[2]


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (``platform.processor`` is often empty)."""
    try:
        with Path("/proc/cpuinfo").open(encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float:
    try:
        with Path("/proc/meminfo").open(encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def load_average() -> list[float]:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """What a figure is read with: CPUs, memory, kernel, Python."""
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "arch": platform.machine(),
        "memory_gib": round(memory_gib(), 1),
        "kernel": platform.release(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


@dataclass
class Target:
    """``value op limit`` must hold: ``op`` is ``<=`` or ``>=``."""

    op: str
    limit: float

    def met(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit


@dataclass
class Figure:
    """One measured figure. ``value`` is the median of ``samples`` unless given."""

    key: str
    label: str
    unit: str
    value: float
    low: float
    high: float
    count: int
    over: str = "runs"
    """What ``count`` counts: ``runs`` (fresh repetitions) or e.g. ``15 s windows``."""
    target: Target | None = None
    baseline: str = ""
    status: str = ""
    """``met``, ``missed`` or empty (no target)."""
    reason: str = ""
    """Why a missed target was missed: data the benchmark emitted, one line."""
    note: str = ""


@dataclass
class Results:
    """What one benchmark run emits; ``write`` stamps the machine and the end of the run."""

    benchmark: str
    title: str
    settings: dict[str, Any] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    """Extra tables (``title``, ``columns``, ``rows`` of strings) shown after the figures."""
    started: float = field(default_factory=time.time)
    load_start: list[float] = field(default_factory=load_average)

    def add(
        self,
        key: str,
        label: str,
        samples: Sequence[float],
        unit: str,
        *,
        value: float | None = None,
        over: str = "runs",
        target: tuple[str, float] | None = None,
        baseline: str = "",
        why_missed: str = "",
        note: str = "",
    ) -> Figure:
        """Add a figure from its samples (median, min, max); ``value`` overrides the median
        (e.g. a whole-run average). ``why_missed`` is kept only if the target is missed."""
        if not samples:
            raise ValueError(f"figure {key!r} has no samples")
        median = statistics.median(samples) if value is None else value
        goal = Target(*target) if target else None
        status = "" if goal is None else ("met" if goal.met(median) else "missed")
        figure = Figure(
            key=key,
            label=label,
            unit=unit,
            value=float(median),
            low=float(min(samples)),
            high=float(max(samples)),
            count=len(samples),
            over=over,
            target=goal,
            baseline=baseline,
            status=status,
            reason=_with_load(why_missed or "the benchmark gave no reason")
            if status == "missed"
            else "",
            note=note,
        )
        self.figures.append(figure)
        return figure

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "benchmark": self.benchmark,
            "title": self.title,
            "started": self.started,
            "finished": time.time(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started)),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]).replace(f"{ROOT}/", ""),
            "settings": self.settings,
            "machine": machine(),
            "load_average": {"start": self.load_start, "end": load_average()},
            "figures": [asdict(figure) for figure in self.figures],
            "tables": self.tables,
        }

    def write(self, path: Path | None) -> None:
        """Write the JSON to ``path`` (atomically: a crash leaves the previous run's file)."""
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        partial.replace(path)
        print(f"results written to {path}")


def _with_load(reason: str) -> str:
    """A miss's reason, with the load average when it was measured (a busy machine is the
    first thing to rule out)."""
    load = load_average()
    return (
        f"{reason}; load average {load[0]:.1f}" if load and "load average" not in reason else reason
    )


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", type=Path, default=None, help="write the figures here (scripts/bench does)"
    )
