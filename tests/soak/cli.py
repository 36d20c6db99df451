"""``scripts/soak``: many randomized scenarios, the invariants judged on every one.

Each scenario is drawn from ``(seed, index)`` alone (``plan.draw``), so any run replays with
``scripts/soak --runs 1 --seed S --scenario K``; ``--jobs`` runs scenarios side by side in
worker processes without changing any of them. Output: one line per run, then the faults
injected by kind and the checks and violations by invariant. Exit status: 0 when every run
held every invariant, 1 when any was violated or a run could not be carried out, 2 for bad
usage or a machine that cannot run it (root, dbus-daemon and systemd-logind are needed).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import platform
import random
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.soak.breaks import BREAKS
from tests.soak.invariants import INVARIANTS, judge
from tests.soak.launch import Launcher, LaunchMode
from tests.soak.plan import FAULT_KINDS, draw
from tests.soak.scenario import run_scenario

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


@dataclass
class RunResult:
    seed: int
    index: int
    replay: str
    seconds: float
    faults: dict[str, int]
    violations: list[tuple[str, str]]
    checks: dict[str, int]
    error: str | None = None
    workdir: str = ""


@dataclass
class Summary:
    seed: int
    runs: int = 0
    seconds: float = 0.0
    faults: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    failed_runs: list[RunResult] = field(default_factory=list)
    errors: int = 0
    interrupted: bool = False


_launcher: Launcher | None = None


def _worker_launcher(mode: LaunchMode, break_name: str | None) -> Launcher:
    global _launcher  # noqa: PLW0603 - one fork server per worker process, made on first use
    if _launcher is None:
        _launcher = Launcher(mode, break_name)
    return _launcher


def run_one(  # noqa: PLR0917 - a pool task: positional arguments pickle plainly
    seed: int,
    index: int,
    mode: LaunchMode,
    break_name: str | None,
    keep: bool,
    base_dir: str | None,
) -> RunResult:
    """Run and judge scenario ``index`` (in whichever process calls it)."""
    scenario = draw(seed, index)
    started = time.monotonic()
    obs = run_scenario(
        scenario,
        _worker_launcher(mode, break_name),
        base_dir=Path(base_dir) if base_dir else None,
    )
    verdict = judge(obs) if obs.error is None else None
    faults = dict(obs.faults)
    faults.update(scenario.shape_counts())
    if obs.power_offs:
        faults["power-off"] = len(obs.power_offs)
    if cancels := sum(1 for value, _ in obs.signals if not value):
        faults["cancelled-shutdown"] = cancels
    if obs.foreign_writes:
        faults["foreign-writes"] = obs.foreign_writes
    violations = [(v.invariant, v.detail) for v in verdict.violations] if verdict else []
    kept = keep or bool(violations) or obs.error is not None
    if kept:  # what the observers saw, for a look at a violation without a replay
        document = {"observations": asdict(obs), "violations": violations}
        Path(obs.workdir, "observations.json").write_text(json.dumps(document, default=str))
    else:
        shutil.rmtree(obs.workdir, ignore_errors=True)
    return RunResult(
        seed=seed,
        index=index,
        replay=scenario.replay + (f" --break {break_name}" if break_name else ""),
        seconds=round(time.monotonic() - started, 2),
        faults=faults,
        violations=violations,
        checks=verdict.checks if verdict else {},
        error=obs.error,
        workdir=obs.workdir if kept else "",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/soak",
        description="Randomized soak of the agent's shutdown and readiness under faults.",
    )
    parser.add_argument("--runs", type=int, default=200, help="scenarios to run (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="base seed (default: random)")
    parser.add_argument(
        "--scenario", type=int, default=0, help="index of the first scenario (default 0)"
    )
    parser.add_argument(
        "--minutes", type=float, default=None, help="start no new scenario after this long"
    )
    parser.add_argument("--jobs", type=int, default=1, help="scenarios run side by side")
    parser.add_argument(
        "--launch",
        choices=("fork", "exec"),
        default="fork",
        help="agent processes forked from a pre-imported server (default) or exec'd afresh",
    )
    parser.add_argument(
        "--break",
        dest="break_name",
        choices=sorted(BREAKS),
        default=None,
        help="TEST ONLY: break the agent on purpose, to show the soak catches it",
    )
    parser.add_argument("--keep", action="store_true", help="keep every run's directory")
    parser.add_argument("--workdir", default=None, help="where run directories go")
    parser.add_argument("--json", dest="json_path", default=None, help="write the summary here")
    parser.add_argument("--quiet", action="store_true", help="no line per run")
    return parser


def _results(args: argparse.Namespace, seed: int) -> Iterator[RunResult]:
    indices = range(args.scenario, args.scenario + args.runs)
    stop_at = time.monotonic() + args.minutes * 60 if args.minutes else None
    if args.workdir:  # a directory that does not exist yet is made, not a crash per run
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    common = (args.launch, args.break_name, args.keep, args.workdir)
    if args.jobs <= 1:
        for index in indices:
            if stop_at is not None and time.monotonic() > stop_at:
                return
            yield run_one(seed, index, *common)
        return
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context)
    try:
        pending: set[concurrent.futures.Future[RunResult]] = set()
        queue = iter(indices)
        while True:
            while len(pending) < args.jobs and (stop_at is None or time.monotonic() < stop_at):
                index = next(queue, None)
                if index is None:
                    break
                pending.add(pool.submit(run_one, seed, index, *common))
            if not pending:
                return
            done, pending = concurrent.futures.wait(
                pending, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in sorted(done, key=lambda f: f.result().index):
                yield future.result()
    finally:
        # Interrupted or done: no new scenario starts; running ones end on their own.
        pool.shutdown(wait=False, cancel_futures=True)


def _line(result: RunResult) -> str:
    faults = ",".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(result.faults.items()))
    if result.error:
        status = "ERROR"
    elif result.violations:
        status = "VIOLATION " + ",".join(sorted({v[0] for v in result.violations}))
    else:
        status = "ok"
    return f"run {result.index:5d}  {result.seconds:6.2f} s  {status:<12}  {faults}"


def _table(title: str, rows: Sequence[tuple[str, str, str]], head: tuple[str, str, str]) -> str:
    width = max(len(head[0]), *(len(r[0]) for r in rows)) if rows else len(head[0])
    lines = [title, f"  {head[0]:<{width}}  {head[1]:>10}  {head[2]:>10}"]
    lines += [f"  {a:<{width}}  {b:>10}  {c:>10}" for a, b, c in rows]
    return "\n".join(lines)


def render(summary: Summary, args: argparse.Namespace) -> str:
    fault_rows = [
        (k, str(summary.faults[k]), "")
        for k in (*FAULT_KINDS, *sorted(k for k in summary.faults if k not in FAULT_KINDS))
        if summary.faults.get(k)
    ]
    invariant_rows = [
        (k, str(summary.checks.get(k, 0)), str(summary.violations.get(k, 0))) for k in INVARIANTS
    ]
    out = [
        "",
        f"soak: {summary.runs} runs, seed {summary.seed}, {summary.seconds:.0f} s, "
        f"jobs {args.jobs}, launch {args.launch}"
        + (f", BREAK {args.break_name}" if args.break_name else ""),
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}",
        "",
        _table("faults injected", fault_rows, ("kind", "count", "")),
        "",
        _table("invariants", invariant_rows, ("invariant", "checks", "violations")),
    ]
    if summary.interrupted:
        out.append("\ninterrupted: the summary covers the runs that finished")
    if summary.errors:
        out.append(f"\nruns that could not be carried out: {summary.errors}")
    for result in summary.failed_runs:
        out.append(f"\nrun {result.index} (seed {result.seed}): replay with  {result.replay}")
        for invariant, detail in result.violations[:5]:
            out.append(f"  {invariant}: {detail}")
        if result.error:
            out.append("  error: " + result.error.strip().replace("\n", "\n    "))
        if result.workdir:
            out.append(f"  logs: {result.workdir}")
    return "\n".join(out)


def _add(summary: Summary, result: RunResult, *, quiet: bool) -> None:
    summary.runs += 1
    summary.faults.update(result.faults)
    summary.checks.update(result.checks)
    summary.violations.update(invariant for invariant, _ in result.violations)
    if result.error:
        summary.errors += 1
    if result.error or result.violations:
        summary.failed_runs.append(result)
    if not quiet:
        print(_line(result), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a stop still prints the summary
    if args.runs < 1 or args.jobs < 1:
        print("scripts/soak: --runs and --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    from tests.harness.logind.fixtures import unavailable_reason  # noqa: PLC0415 - imports pytest

    if (reason := unavailable_reason()) is not None:
        print(f"scripts/soak: cannot run here: {reason}", file=sys.stderr)
        return EXIT_USAGE
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    summary = Summary(seed=seed)
    started = time.monotonic()
    if not args.quiet:
        print(f"soak: seed {seed}, up to {args.runs} runs from scenario {args.scenario}")
    results = _results(args, seed)
    try:
        for result in results:
            _add(summary, result, quiet=args.quiet)
    except KeyboardInterrupt:
        summary.interrupted = True
        results.close()
    summary.seconds = time.monotonic() - started
    print(render(summary, args), flush=True)
    if args.json_path:
        document = {
            "seed": seed,
            "runs": summary.runs,
            "seconds": round(summary.seconds, 1),
            "faults": dict(summary.faults),
            "checks": dict(summary.checks),
            "violations": {k: summary.violations.get(k, 0) for k in INVARIANTS},
            "errors": summary.errors,
            "failed": [asdict(r) for r in summary.failed_runs],
            "break": args.break_name,
            "interrupted": summary.interrupted,
        }
        Path(args.json_path).write_text(json.dumps(document, indent=2) + "\n")
    failed = summary.errors or summary.interrupted or sum(summary.violations.values())
    return EXIT_VIOLATION if failed else EXIT_OK
