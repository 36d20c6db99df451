"""Benchmark: the whole test suite on a fresh clone, as CI runs it (``scripts/test``).

Target (issue 23): pytest's own time at most 2 minutes on a 2-CPU machine, with at least as
many tests as before the restructuring. Baseline: that run before it, 5 min 14 s for 2,716
tests, serial (the tests collected at the last commit before it; the time as measured on a
fresh clone of a machine this size). A figure here, never a timed test: the suite's speed is
the machine's as much as ours.

Each run clones the repository's committed HEAD (what CI sees: no work tree edits, no
``.venv``) into a temporary directory and runs ``scripts/test`` there, which installs its
Debian packages (already present after the first run), builds a venv with the test extras,
lints, type-checks and runs pytest in parallel. The venv's build is in the whole-command
figure and not in pytest's.

The same-run baseline (``--baseline REV``, by default the last commit before issue 29's
restructuring of the tests and packages) is run in turns with HEAD, so both see the same
load: issue 29 asks for no fewer tests and no more time than before it. Its count differs
(work merged since added tests), so the time is compared per test as well as in total.

Run: .venv/bin/python -m scripts.benchmarks.testsuite [--runs 3] [--baseline REV] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchmarks.results import ROOT, Results, add_output_argument

RESULTS = Results("testsuite", "Test suite on a fresh clone")
BEFORE_SECONDS = 5 * 60 + 14
BEFORE_TESTS = 2716
TARGET_SECONDS = 120.0
BEFORE_RESTRUCTURING = "8faa8cd"
"""The last commit before issue 29's restructuring (tests mirroring the packages, one
waiting helper, the options object, agent/kubesemantics)."""
SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s")


def _counts(text: str) -> dict[str, int]:
    """pytest's closing line as numbers: ``{"passed": 2796, "skipped": 3}``."""
    return {word: int(number) for number, word in re.findall(r"(\d+) (\w+)", text)}


def one_run(workdir: Path, revision: str | None = None) -> tuple[float, float, dict[str, int]]:
    """(pytest seconds, whole scripts/test seconds, counts) of one fresh clone, of HEAD or
    of ``revision``. A baseline revision's failed tests are counted, not fatal: the figure
    is its time."""
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    if revision is not None:
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", revision], check=True)
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    started = time.perf_counter()
    child = subprocess.run(
        [str(clone / "scripts" / "test")],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    whole = time.perf_counter() - started
    found = SUMMARY.findall(child.stdout)
    if not found or (child.returncode != 0 and revision is None):
        sys.stderr.write(child.stdout[-4000:] + child.stderr[-4000:])
        raise RuntimeError(f"scripts/test exited {child.returncode}")
    counts, seconds = found[-1]
    return float(seconds), whole, _counts(counts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--baseline",
        default=BEFORE_RESTRUCTURING,
        help="a revision run in turns with HEAD ('' for none)",
    )
    add_output_argument(parser)
    args = parser.parse_args()
    RESULTS.settings = {"runs": args.runs, "CPUs": os.cpu_count(), "baseline": args.baseline}
    pytest_seconds: list[float] = []
    whole_seconds: list[float] = []
    tests: list[float] = []
    before_seconds: list[float] = []
    before_tests: list[float] = []
    before_whole: list[float] = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as workdir:
            seconds, whole, counts = one_run(Path(workdir))
        pytest_seconds.append(seconds)
        whole_seconds.append(whole)
        tests.append(sum(counts.values()))
        print(f"  run {run + 1}: pytest {seconds:.1f} s, scripts/test {whole:.1f} s, {counts}")
        if args.baseline:
            with tempfile.TemporaryDirectory() as workdir:
                seconds, whole, counts = one_run(Path(workdir), args.baseline)
            before_seconds.append(seconds)
            before_whole.append(whole)
            before_tests.append(sum(counts.values()))
            print(
                f"  run {run + 1} at {args.baseline}: pytest {seconds:.1f} s, "
                f"scripts/test {whole:.1f} s, {counts}"
            )
    if before_seconds:
        _compare_with_baseline(args.baseline, pytest_seconds, tests, before_seconds, before_tests)
    RESULTS.add(
        "pytest_seconds",
        f"pytest's time in `scripts/test` on a fresh clone ({os.cpu_count()} CPUs, parallel)",
        pytest_seconds,
        "s",
        target=("<=", TARGET_SECONDS),
        baseline=f"before the restructuring: {BEFORE_SECONDS // 60} min {BEFORE_SECONDS % 60} s "
        f"serial ({BEFORE_SECONDS / min(pytest_seconds):.1f}x this run's fastest)",
        why_missed=f"load average {os.getloadavg()[0]:.1f}",
    )
    RESULTS.add(
        "tests",
        "tests run (passed + skipped) by `scripts/test`",
        tests,
        "",
        target=(">=", BEFORE_TESTS),
        baseline=f"before the restructuring: {BEFORE_TESTS:,} collected",
    )
    # Beside the baseline's whole command too: work scripts/test does before pytest (the
    # bytecode it primes while the lint steps run) must not just move pytest's time there.
    whole_target: tuple[str, float] | None = None
    whole_baseline = ""
    if before_whole:
        before = statistics.median(before_whole)
        whole_target, whole_baseline = ("<=", before), f"{args.baseline}: {before:.0f} s"
    RESULTS.add(
        "whole_seconds",
        "the whole `scripts/test` on a fresh clone: packages present, venv built, lint, "
        "mypy, import contracts, pytest",
        whole_seconds,
        "s",
        target=whole_target,
        baseline=whole_baseline,
        why_missed=f"load average {os.getloadavg()[0]:.1f}",
    )
    RESULTS.write(args.json)
    return 0


def _compare_with_baseline(
    revision: str,
    seconds: list[float],
    tests: list[float],
    before_seconds: list[float],
    before_tests: list[float],
) -> None:
    """Issue 29's figures: the suite's time, in total and per 1,000 tests, beside the
    baseline revision's in the same run (its median the target: not higher)."""
    before = statistics.median(before_seconds)
    before_count = statistics.median(before_tests)
    RESULTS.add(
        "pytest_seconds_vs_baseline",
        f"pytest's time beside {revision}'s (before issue 29's restructuring), same run",
        seconds,
        "s",
        target=("<=", before),
        baseline=f"{revision}: {before:.0f} s for {before_count:,.0f} tests",
        why_missed=f"{statistics.median(tests):,.0f} tests against {before_count:,.0f}; "
        f"load average {os.getloadavg()[0]:.1f}",
    )
    per_thousand = [1000 * s / n for s, n in zip(seconds, tests, strict=True)]
    before_per_thousand = 1000 * before / before_count
    RESULTS.add(
        "pytest_seconds_per_thousand_tests",
        "pytest's time per 1,000 tests run",
        per_thousand,
        "s",
        target=("<=", before_per_thousand),
        baseline=f"{revision}: {before_per_thousand:.1f} s",
        why_missed=f"load average {os.getloadavg()[0]:.1f}",
    )
    RESULTS.add(
        "tests_vs_baseline",
        f"tests run beside {revision}'s",
        tests,
        "",
        target=(">=", before_count),
        baseline=f"{revision}: {before_count:,.0f}",
    )


if __name__ == "__main__":
    sys.exit(main())
