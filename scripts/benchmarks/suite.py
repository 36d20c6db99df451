"""``scripts/bench``: run the benchmarks, keep their JSON results, rewrite BENCHMARKS.md.

Each benchmark runs as its own process (a crash or a leak in one never colours another's
figures) with the settings below, writes ``bench-results/<name>.json`` and the renderer
rebuilds BENCHMARKS.md from every results file there. ``--quick`` runs a cut-down set with
small settings into ``bench-results/quick/``, so it never replaces a full figure; the
renderer shows a quick result only for a benchmark that has no full one, labelled.

Benchmarks never run in CI: no test runs this; a unit test renders sample results.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.benchmarks.kubeletnode import requirements
from scripts.benchmarks.livecluster import binaries

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@dataclass(frozen=True)
class Benchmark:
    name: str
    full: tuple[str, ...]
    quick: tuple[str, ...] | None
    """``None``: not in the quick set."""
    needs_root: bool = False
    minutes: float = 1.0
    """Roughly how long the full run takes on a quiet 2-CPU machine."""
    needs_control_plane: bool = False
    """Runs kube-apiserver, kube-scheduler, kube-controller-manager and etcd, which no package
    registry has: skipped, with what is missing, where they are not built
    (``livecluster/binaries.py``)."""
    needs_real_node: bool = False
    """Runs a real kubelet beside the control plane, with containerd, runc and the CNI
    plugins: skipped, with what is missing (``kubeletnode/requirements.py``)."""


BENCHMARKS = (
    Benchmark("startup", ("--runs", "7"), ("--runs", "3"), minutes=0.2),
    Benchmark("kube_json", ("--runs", "7"), ("--pods", "500", "--runs", "5"), minutes=0.3),
    Benchmark("swap", ("--runs", "51"), ("--runs", "11"), minutes=0.2),
    Benchmark(
        "readiness",
        ("--runs", "25", "--requeue-runs", "5"),
        ("--runs", "3", "--requeue-runs", "0"),
        minutes=1.5,
    ),
    Benchmark("report", ("--runs", "101"), ("--runs", "11"), minutes=0.5),
    Benchmark("shutdown", ("--rounds", "7"), ("--rounds", "1", "--pods", "6"), True, 1.5),
    Benchmark(
        "descheduler",
        ("--sizes", "1000,2000,5000", "--runs", "11"),
        (
            "--sizes",
            "100,200",
            "--runs",
            "1",
            "--evictions",
            "20",
            "--cold-start-nodes",
            "0",
            "--cold-start-list-nodes",
            "100",
            "--cold-start-runs",
            "1",
            "--plan-runs",
            "1",
        ),
        minutes=15,
    ),
    Benchmark(
        "growth",
        ("--runs", "5"),
        (
            *("--gzip-mb", "0.25,0.5", "--digits", "20000,40000", "--pods", "300,600"),
            *("--runs", "1", "--upstream", "off"),
        ),
        minutes=12,
    ),
    Benchmark(
        "footprint",
        ("--duration", "120", "--leak-minutes", "30"),
        # The test venv: building .venv-agent (runtime dependencies only) takes a minute.
        (
            *("--nodes", "100", "--duration", "30", "--phase", "15", "--warmup", "2"),
            *("--agent-venv", "test"),
        ),
        minutes=33,
    ),
    Benchmark("testsuite", ("--runs", "2"), None, needs_root=True, minutes=16),
    Benchmark(
        "live",
        (
            *("--scenarios", "reference,medium,wide,compact,usage,usage-wide"),
            *("--runs", "2", "--duration", "150"),
        ),
        None,
        minutes=100,
        needs_control_plane=True,
    ),
    Benchmark(
        "realnode",
        ("--runs", "10", "--readiness-runs", "5"),
        None,
        needs_root=True,
        minutes=9,
        needs_real_node=True,
    ),
)


def run(benchmark: Benchmark, args: tuple[str, ...], results: Path) -> bool:
    command = [
        sys.executable,
        "-m",
        f"scripts.benchmarks.{benchmark.name}",
        *args,
        "--json",
        str(results / f"{benchmark.name}.json"),
    ]
    print(f"## {benchmark.name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    status = subprocess.run(command, cwd=ROOT, check=False).returncode
    print(f"## {benchmark.name}: exit {status} after {time.monotonic() - started:.0f} s\n")
    return status == 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the cut-down set, under 2 minutes")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument(
        "--render-only", action="store_true", help="rebuild BENCHMARKS.md from the results"
    )
    parser.add_argument(
        "extra",
        nargs="*",
        help="after --: more arguments for the one benchmark --only names (they override its "
        "settings, e.g. scripts/bench --only footprint -- --leak-minutes 0)",
    )
    options = parser.parse_args()
    if options.list:
        for b in BENCHMARKS:
            quick = " ".join(b.quick) if b.quick is not None else "(not in --quick)"
            print(f"{b.name:12} ~{b.minutes:g} min  full: {' '.join(b.full)}  quick: {quick}")
        return 0
    names = {b.name for b in BENCHMARKS}
    only = {name for name in options.only.split(",") if name}
    if only - names:
        print(f"unknown benchmark(s): {', '.join(sorted(only - names))}", file=sys.stderr)
        return 2
    if options.extra and len(only) != 1:
        print("arguments after -- need exactly one benchmark in --only", file=sys.stderr)
        return 2
    results = ROOT / "bench-results" / ("quick" if options.quick else "")
    results.mkdir(parents=True, exist_ok=True)
    failed = []
    started = time.monotonic()
    for benchmark in BENCHMARKS if not options.render_only else ():
        settings = benchmark.quick if options.quick else benchmark.full
        if (only and benchmark.name not in only) or settings is None:
            continue
        if benchmark.needs_root and os.geteuid() != 0:
            print(f"## {benchmark.name}: skipped (needs root)\n")
            continue
        if benchmark.needs_control_plane and (missing := binaries.find()[1]):
            print(f"## {benchmark.name}: skipped ({missing})\n")
            continue
        if benchmark.needs_real_node and (missing := requirements.find()[1]):
            print(f"## {benchmark.name}: skipped ({missing})\n")
            continue
        if not run(benchmark, (*settings, *options.extra), results):
            failed.append(benchmark.name)
    subprocess.run([sys.executable, "-m", "scripts.benchmarks.render"], cwd=ROOT, check=True)
    print(
        f"all done in {time.monotonic() - started:.0f} s"
        + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
