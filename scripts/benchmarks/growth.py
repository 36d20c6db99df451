"""Benchmark: how the cost of hostile input grows with its size.

Three inputs anyone can hand the descheduler (``growth_inputs`` says how each is built), each
at sizes that double, fed to ``kubelet-companion descheduler plan`` in a fresh process
(the whole command: read, project, cycle, destinations, JSON out), timed in that process's
CPU time (start-up and imports left out; on a shared machine wall time would count the
other processes' work):

- (a) a snapshot file of N MB of empty gzip members (N = 1, 2, 4, 8);
- (b) one node quantity of 100k, 200k, 400k, 800k digits;
- (c) 1,000 / 2,000 / 3,000 pods x 20 required anti-affinity terms, in one namespace; for
  this one the cycle alone is timed too (in the child, after the snapshot is read), the
  part the live loop spends each cycle, and, as a reference of how this machine scales a
  single linear pass over the same bytes, reading the snapshot alone (decode and project).

Target: doubling the input costs at most 2.3x the time (linear, with room for noise). Each
larger size is compared with the smallest (the baseline, measured in the same round):
``(t / t0) ** (1 / log2(n / n0))`` is the cost of one doubling, whether the sizes are 2x, 3x
or 8x apart; the figure is the worst size's median over the rounds. Sizes run round by
round, so a slow spell of the machine falls on every size alike. Each input may be
read or refused: a refusal is fine (the time to refuse is what grows then), and the table
says which happened at each size. A size that takes longer than ``--timeout`` stops its
input's larger sizes, and the growth figure says so.

(c) also runs beside upstream v0.36.0 on the same state (``growth_upstream``): the objects
loaded into a real kube-apiserver, upstream's descheduler run once in dry-run mode, its
cycle timed from its own log, and ours run the same way. Without the control plane's
binaries the figure recorded on 2026-11-28 is quoted instead, with the reason.

Run: .venv/bin/python -m scripts.benchmarks.growth [--gzip-mb 1,2,4,8]
     [--digits 100000,200000,400000,800000] [--pods 1000,2000,3000] [--terms 20] [--runs 5]
     [--timeout 300] [--upstream auto|off] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scripts.benchmarks import growth_inputs, growth_upstream
from scripts.benchmarks.results import ROOT, Results, add_output_argument

DOUBLING_TARGET = 2.3
PLAN_TARGET_SECONDS = 10.0
"""3,000 pods x 20 terms planned in seconds (upstream's cycle alone took minutes before)."""

CHILD = """
import json, sys, time
mode, argv = sys.argv[1], sys.argv[2:]
clock = time.process_time
result = {}
if mode in ("cycle", "read"):
    from agent.descheduler.cache.snapshotfile import load_snapshot
    from agent.descheduler.live.runner import plan_cycle  # as the live loop plans
    from agent.descheduler.policyfile import load_policy
    policy = load_policy(argv[1])
    started = clock()
    snapshot = load_snapshot(argv[0], now=time.time()).snapshot
    result["seconds"] = clock() - started
    if mode == "cycle":
        started = clock()
        plan = plan_cycle(policy, snapshot)
        result["seconds"] = clock() - started
        result["evictions"] = len(plan.evictions)
    code = 0
else:
    from agent.cli import build_parser, main
    import agent.descheduler.offline.command  # the command's imports, outside the timing
    build_parser()  # and the other commands' (the parser imports them)
    started = clock()
    code = main(argv)
    result["seconds"] = clock() - started
sys.stdout.flush()
result["exit"] = code
sys.stderr.write("\\nGROWTH_RESULT=" + json.dumps(result) + "\\n")
"""
"""One measurement in a fresh interpreter, in its CPU time (on a shared machine, wall time
counts the other processes' work too), start-up and imports left out. ``read``: only the
snapshot file read and projected, the reference for (c)."""


@dataclass
class Outcome:
    seconds: float | None
    """``None``: timed out."""
    exit: int | None = None
    said: str = ""
    """The first line the command wrote to stderr (why it refused), if any."""
    evictions: int | None = None
    placed: int | None = None


def child(mode: str, argv: Sequence[str], timeout: float, workdir: Path) -> Outcome:
    command = [sys.executable, "-c", CHILD, mode, *argv]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=ROOT, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Outcome(None)
    head, marker, tail = done.stderr.rpartition("GROWTH_RESULT=")
    if not marker:
        raise RuntimeError(f"{mode} {argv} died (exit {done.returncode}): {done.stderr[-1500:]}")
    result = json.loads(tail.splitlines()[0])
    said = " / ".join([line.strip() for line in head.splitlines() if line.strip()][:2])
    said = said.replace(f"{workdir}/", "")  # the temp dir's name says nothing
    outcome = Outcome(result["seconds"], result["exit"], said[:200], result.get("evictions"))
    if mode == "plan" and result["exit"] == 0 and done.stdout.strip():
        plan = json.loads(done.stdout)
        outcome.evictions = len(plan["evictions"])
        outcome.placed = sum(1 for e in plan["evictions"] if e.get("destination"))
    return outcome


@dataclass
class Series:
    """One input at its sizes: what is measured, the rounds' outcomes."""

    key: str
    title: str
    unit: str
    """How a size is counted (``MB``, ``digits``, ``pods``)."""
    sizes: list[float]
    run: Callable[[float], Outcome]
    outcomes: dict[float, list[Outcome]] = field(default_factory=dict)
    stopped: str = ""
    """Why the larger sizes stopped being run (a timeout), or ``""``."""
    stopped_at: float = math.inf
    target: bool = True
    """``False``: a reference, shown without a target (how the machine itself scales)."""

    def measure_round(self, timeout: float) -> None:
        for size in self.sizes:
            if size > self.stopped_at:
                continue
            outcome = self.run(size)
            self.outcomes.setdefault(size, []).append(outcome)
            print(f"  {self.key} {size:g} {self.unit}: {_describe(outcome)}", flush=True)
            if outcome.seconds is None:
                self.stopped = f"{size:g} {self.unit} took longer than {timeout:g} s"
                self.stopped_at = size
                return

    def seconds(self, size: float) -> list[float]:
        return [o.seconds for o in self.outcomes.get(size, []) if o.seconds is not None]

    def doubling_ratios(self) -> list[tuple[float, float, list[float]]]:
        """Per larger size measured in every round, against the smallest (the baseline):
        each round's cost of one doubling, ``(t / t0) ** (1 / log2(n / n0))``."""
        measured = [s for s in self.sizes if self.seconds(s) and s not in self._timed_out()]
        pairs = []
        for large in measured[1:]:
            small = measured[0]
            exponent = 1 / math.log2(large / small)
            ratios = [
                (b / a) ** exponent
                for a, b in zip(self.seconds(small), self.seconds(large), strict=False)
                if a > 0
            ]
            if ratios:
                pairs.append((small, large, ratios))
        return pairs

    def _timed_out(self) -> set[float]:
        return {s for s, runs in self.outcomes.items() if any(o.seconds is None for o in runs)}


def _describe(outcome: Outcome) -> str:
    if outcome.seconds is None:
        return "timed out"
    text = f"{outcome.seconds:.3f} s, exit {outcome.exit}"
    if outcome.evictions is not None:
        text += f", {outcome.evictions} evictions"
    if outcome.placed is not None:
        text += f" ({outcome.placed} placed)"
    if outcome.said:
        text += f": {outcome.said}"
    return text


def _verdict(outcome: Outcome) -> str:
    """What the command did with the input: read it, accepted it, or refused it (and why)."""
    if outcome.seconds is None:
        return "timed out"
    if outcome.exit == 0:
        return "accepted"
    return f"refused (exit {outcome.exit}): {outcome.said}"


def _sizes(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def build_series(args: argparse.Namespace, workdir: Path) -> list[Series]:
    policy = workdir / "policy.yaml"
    policy.write_text(growth_inputs.POLICY, encoding="utf-8")

    def plan(path: Path) -> Outcome:
        argv = ["descheduler", "plan", "--snapshot", str(path)]
        argv += ["--policy-config-file", str(policy), "--output", "json"]
        return child("plan", argv, args.timeout, workdir)

    def gzip_run(megabytes: float) -> Outcome:
        path = workdir / f"members-{megabytes:g}.json.gz"
        if not path.exists():
            path.write_bytes(growth_inputs.gzip_members(megabytes))
        return plan(path)

    def quantity_run(digits: float) -> Outcome:
        path = workdir / f"quantity-{digits:g}.json"
        if not path.exists():
            path.write_bytes(growth_inputs.quantity_snapshot(int(digits)))
        return plan(path)

    def antiaffinity_path(pods: float) -> Path:
        path = workdir / f"antiaffinity-{pods:g}.json"
        if not path.exists():
            path.write_bytes(growth_inputs.antiaffinity_snapshot(int(pods), args.terms))
        return path

    def cycle_run(pods: float) -> Outcome:
        argv = [str(antiaffinity_path(pods)), str(policy)]
        return child("cycle", argv, args.timeout, workdir)

    def read_run(pods: float) -> Outcome:
        argv = [str(antiaffinity_path(pods)), str(policy)]
        return child("read", argv, args.timeout, workdir)

    return [
        Series("gzip", "(a) empty gzip members", "MB", _sizes(args.gzip_mb), gzip_run),
        Series("quantity", "(b) one node quantity", "digits", _sizes(args.digits), quantity_run),
        Series(
            "antiaffinity",
            f"(c) pods x {args.terms} anti-affinity terms, `plan`",
            "pods",
            _sizes(args.pods),
            lambda pods: plan(antiaffinity_path(pods)),
        ),
        Series(
            "antiaffinity_cycle",
            f"(c) pods x {args.terms} anti-affinity terms, the cycle alone",
            "pods",
            _sizes(args.pods),
            cycle_run,
        ),
        Series(
            "antiaffinity_read",
            "(c) reference: reading the same snapshot (one linear pass: msgspec, projection)",
            "pods",
            _sizes(args.pods),
            read_run,
            target=False,
        ),
    ]


def emit(results: Results, series: list[Series], upstream: growth_upstream.Comparison) -> None:
    rows = []
    for each in series:
        base = each.sizes[0] if each.sizes else 0
        base_median = statistics.median(each.seconds(base)) if each.seconds(base) else None
        for size in each.sizes:
            samples = each.seconds(size)
            runs = each.outcomes.get(size, [])
            if not runs:
                continue
            median = statistics.median(samples) if samples else None
            ratio = f"{median / base_median:.2f}x" if median is not None and base_median else ""
            rows.append(
                [
                    each.title,
                    f"{size:,g} {each.unit}",
                    f"{median:.3f} s" if median is not None else "timed out",
                    ratio,
                    _verdict(runs[-1]),
                ]
            )
            if samples and each.key.startswith("antiaffinity"):
                results.add(
                    f"{each.key}_{size:g}",
                    f"{each.title}, {size:,g} pods",
                    samples,
                    "s",
                    target=("<=", PLAN_TARGET_SECONDS) if each.key == "antiaffinity" else None,
                    baseline=(upstream.baseline_text(int(size)) if each.target else "a reference"),
                )
        pairs = each.doubling_ratios()
        if not pairs:
            continue
        worst = max(pairs, key=lambda pair: statistics.median(pair[2]))
        small, large, ratios = worst
        others = ", ".join(f"{a:,g}->{b:,g}: {statistics.median(r):.2f}x" for a, b, r in pairs)
        reason = each.stopped or f"{small:,g} -> {large:,g} {each.unit}"
        results.add(
            f"{each.key}_doubling",
            f"{each.title}: time per doubling of the input, worst size against the smallest "
            f"({others})",
            ratios,
            "x",
            target=("<=", DOUBLING_TARGET) if each.target else None,
            baseline=f"{each.sizes[0]:,g} {each.unit} in the same run",
            why_missed=reason,
            note=each.stopped,
        )
    results.tables.append(
        {
            "title": "Each input at each size (medians; ratio against the smallest size)",
            "columns": ["input", "size", "median", "vs smallest", "what the command did"],
            "rows": rows,
        }
    )
    upstream.emit(results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gzip-mb", default="1,2,4,8")
    parser.add_argument("--digits", default="100000,200000,400000,800000")
    parser.add_argument("--pods", default="1000,2000,3000")
    parser.add_argument("--terms", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per measurement")
    parser.add_argument(
        "--upstream",
        choices=("auto", "off"),
        default="auto",
        help="run upstream on a real control plane when its binaries are built (auto)",
    )
    parser.add_argument(
        "--upstream-pods", type=int, default=0, help="pods of that run (default: the largest)"
    )
    add_output_argument(parser)
    args = parser.parse_args()
    results = Results("growth", "Growth with hostile input")
    results.settings = {
        "gzip_mb": args.gzip_mb,
        "digits": args.digits,
        "pods": args.pods,
        "terms": args.terms,
        "runs": args.runs,
        "timeout": args.timeout,
    }
    with tempfile.TemporaryDirectory(prefix="kc-bench-growth-") as tmp:
        workdir = Path(tmp)
        series = build_series(args, workdir)
        for round_number in range(args.runs):
            print(f"round {round_number + 1} of {args.runs}", flush=True)
            for each in series:
                each.measure_round(args.timeout)
        pods = args.upstream_pods or int(max(_sizes(args.pods), default=0))
        upstream = growth_upstream.compare(
            pods, args.terms, workdir, enabled=args.upstream == "auto"
        )
    emit(results, series, upstream)
    results.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
