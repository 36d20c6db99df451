"""Benchmark: the descheduler's live loop against a real control plane, ours beside upstream's.

A frozen snapshot cannot show how a descheduler balances a cluster: the scheduler decides
where each replacement goes, budgets move as replacements turn Ready, and a descheduler that
keeps evicting is visible only over minutes. So this brings up etcd, kube-apiserver,
kube-scheduler and kube-controller-manager (v1.28.7) on loopback, plays the kubelets of fake
nodes, lays out an imbalanced cluster and lets a descheduler run for ``--duration`` seconds
(default 150), sampling every second. Each implementation meets the same seeded scenario in
the same run: upstream's v0.36.0 (the baseline) and ours at default flags, both with
``--descheduling-interval 15s``. Before each live run ``kubelet-companion descheduler plan``
plans on a snapshot of the same state; the figures say where the real scheduler put each
planned pod's replacement against the plan's prediction.

Scenarios (``livecluster/scenario.py``): ``reference`` (40 nodes, 14 filled to 78 %, 12
Deployments, seed 7) and ``wide`` (60 nodes, 20 filled, 16 Deployments, seed 11), both with
LowNodeUtilization 20/50 then RemoveDuplicates; ``compact`` (HighNodeUtilization 40 % on
cpu and memory, 10 nodes at 60 % and 20 at about 12 %, the scheduler scoring MostAllocated).

Targets (ours; upstream's figures from the same run are the baselines):

- balancing: time until no node is over 50 % <= 0.5 x upstream's; end std. dev. of node
  cpu % <= upstream's; nodes under 20 % or over 50 % at the end = 0;
- compaction: time until no node under 40 % holds a pod <= upstream's; such nodes at the
  end = 0;
- both: evictions in the last 60 s = 0; replacements back on the node they left = 0; every
  Deployment whole at the end; replacements on one of the plan's ``destinationCandidates``
  >= 80 % with a mean candidate set <= 1/3 of the nodes. A ReplicaSet's pods are alike, so
  its replacements are paired with its evictions at best (a maximum matching per owner)
  for the target; the strict pairing (each replacement with the owner's earliest unpaired
  eviction, in time order) is reported beside it.

Skips (exit 0, no results file, as a root-only benchmark without root) when the control
plane's binaries are missing (``livecluster/binaries.py``); without upstream's descheduler
ours runs alone and the relative targets have no baseline.

Run: .venv/bin/python -m scripts.benchmarks.live [--scenarios reference,wide,compact]
     [--runs 1] [--duration 150] [--keep-logs DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scripts.benchmarks.livecluster import binaries
from scripts.benchmarks.livecluster.controlplane import ControlPlane
from scripts.benchmarks.livecluster.scenario import LAST_WINDOW, SCENARIOS, Run, Scenario
from scripts.benchmarks.results import Results, add_output_argument

ROOT = Path(__file__).resolve().parents[2]
OURS = ROOT / ".venv" / "bin" / "kubelet-companion"
INTERVAL = "15s"
UPSTREAM, OURS_NAME = "upstream", "ours"
RESULTS = Results("live", "Live loop on a real control plane")

Record = dict[str, Any]


def upstream_command(binary: Path) -> Callable[[Path, Path], list[str]]:
    def command(kubeconfig: Path, policy: Path) -> list[str]:
        return [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--policy-config-file={policy}",
            f"--descheduling-interval={INTERVAL}",
            "--secure-port=0",
            "--v=2",
        ]

    return command


def ours_command(kubeconfig: Path, policy: Path) -> list[str]:
    return [
        str(OURS),
        "descheduler",
        "--kubeconfig",
        str(kubeconfig),
        "--policy-config-file",
        str(policy),
        "--descheduling-interval",
        INTERVAL,
    ]


def plan_command(snapshot: Path, policy: Path, scheduler: Path) -> list[str]:
    return [
        str(OURS),
        "descheduler",
        "plan",
        "--snapshot",
        str(snapshot),
        "--policy-config-file",
        str(policy),
        "--scheduler-config",
        str(scheduler),
        "--output",
        "json",
    ]


def upstream_version(binary: Path) -> str:
    """What ``descheduler version`` says: its GitVersion, or that the build stamped none
    (a plain ``go build`` of the v0.36.0 tag, as ``$KUBE_BIN_DIR``'s, leaves it empty)."""
    try:
        out = subprocess.run(
            [str(binary), "version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "version unknown"
    fields = dict(
        part.split(":", 1)
        for part in out.replace("{", " ").replace("}", " ").split()
        if ":" in part
    )
    if fields.get("GitVersion"):
        return fields["GitVersion"]
    return f"no version stamped, {fields.get('GoVersion') or 'Go version unknown'}"


# -- figures ----------------------------------------------------------------------------------


def pick(runs: Sequence[Record], get: Callable[[Record], float | None]) -> list[float]:
    return [float(v) for v in (get(r) for r in runs) if v is not None]


def describe(values: Sequence[float], unit: str = "") -> str:
    """``median unit`` with the spread when the runs differ; ``—`` for none."""
    if not values:
        return "—"
    text = f"{_num(statistics.median(values))}{unit}"
    if min(values) != max(values):
        text += f" ({_num(min(values))}-{_num(max(values))})"
    return text


def _num(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:.1f}"


def time_to_target(run: Record) -> float:
    """The time the run first met its scenario's goal; a run that never did counts as its
    whole length (so a median can still be taken; the table says "never")."""
    value = run["time_to_target_s"]
    return float(run["duration_s"]) if value is None else float(value)


def _never(runs: Sequence[Record]) -> int:
    return sum(1 for r in runs if r["time_to_target_s"] is None)


def _hottest(run: Record) -> float:
    return float(run["end"]["hottest"])


def _plan(run: Record, key: str) -> float | None:
    plan = run.get("plan") or {}
    value = plan.get(key)
    return None if value is None else float(value)


class Emitter:
    """The figures of one scenario: ours with targets, upstream's as baselines."""

    def __init__(self, scenario: Scenario, ours: list[Record], upstream: list[Record]) -> None:
        self.s = scenario
        self.ours = ours
        self.upstream = upstream

    def baseline(self, get: Callable[[Record], float | None], unit: str = "") -> str:
        if not self.upstream:
            return "upstream not run (no descheduler binary)"
        return f"upstream: {describe(pick(self.upstream, get), unit)}"

    def upstream_median(self, get: Callable[[Record], float | None]) -> float | None:
        values = pick(self.upstream, get)
        return statistics.median(values) if values else None

    def add(  # noqa: PLR0917 - a figure's inputs, in the order results.add takes them
        self,
        key: str,
        label: str,
        get: Callable[[Record], float | None],
        unit: str,
        target: tuple[str, float] | None,
        why: str,
        note: str = "",
    ) -> None:
        samples = pick(self.ours, get)
        if not samples:
            return
        RESULTS.add(
            f"{self.s.name}_{key}",
            f"{self.s.name}: {label}",
            samples,
            unit,
            target=target,
            baseline=self.baseline(get, f" {unit}" if unit and unit != "%" else unit),
            why_missed=why,
            note=note,
        )

    def emit(self) -> None:
        ours = self.ours
        ev = describe(pick(ours, lambda r: r["evictions"]))
        ev_up = describe(pick(self.upstream, lambda r: r["evictions"]))
        if self.s.compacts:
            self._time(
                "time_to_compact",
                f"time until no node under {self.s.low:.0f} % cpu holds a pod",
                1.0,
            )
            self.add(
                "under_occupied_end",
                f"nodes under {self.s.low:.0f} % cpu still holding pods at the end",
                lambda r: r["end"]["under_occupied"],
                "",
                ("<=", 0),
                f"{describe(pick(ours, lambda r: r['end']['under_occupied']))} left; ours evicted "
                f"{ev}, upstream {ev_up}",
            )
        else:
            self._time(
                "time_to_balance", f"time until no node is over {self.s.high:.0f} % cpu", 0.5
            )
            up_sd = self.upstream_median(lambda r: r["end"]["stddev"])
            self.add(
                "stddev_end",
                "std. dev. of node cpu % at the end",
                lambda r: r["end"]["stddev"],
                "pts",
                None if up_sd is None else ("<=", up_sd),
                f"hottest node at the end {describe(pick(ours, _hottest), ' %')}, "
                f"upstream's {describe(pick(self.upstream, _hottest), ' %')}",
            )
            self.add(
                "out_of_band_end",
                f"nodes under {self.s.low:.0f} % or over {self.s.high:.0f} % cpu at the end",
                lambda r: r["end"]["under"] + r["end"]["over"],
                "",
                ("<=", 0),
                f"under {describe(pick(ours, lambda r: r['end']['under']))}, over "
                f"{describe(pick(ours, lambda r: r['end']['over']))}",
            )
        self.add(
            "evictions_last_60s",
            f"evictions in the last {LAST_WINDOW:.0f} s of {self.s_duration():.0f} s",
            lambda r: r["evictions_last_60s"],
            "",
            ("<=", 0),
            f"last eviction at {describe(pick(ours, lambda r: r['last_eviction_s']), ' s')}; "
            f"{ev} evictions in all",
        )
        self.add(
            "same_node_returns",
            "replacements back on the node they left (within 10 s)",
            lambda r: r["same_node_returns"],
            "",
            ("<=", 0),
            f"of {ev} evictions",
        )
        self.add(
            "deployments_whole",
            "every Deployment whole at the end (1 = yes)",
            lambda r: 1.0 if r["deployments_whole"] else 0.0,
            "",
            (">=", 1),
            "not whole: "
            + ", ".join(sorted({n for r in ours for n in r["deployments_not_whole"]}))[:200],
        )
        self.add(
            "plan_candidates",
            "planned evictions whose replacement landed on one of the plan's "
            "destinationCandidates (each owner's replacements paired with its evictions at "
            "best)",
            lambda r: _plan(r, "owner_candidate_share"),
            "%",
            (">=", 80),
            self._plan_reason(),
            note=self._plan_note(),
        )
        self.add(
            "plan_candidates_strict",
            "the same, each replacement paired with its owner's earliest unpaired eviction",
            lambda r: _plan(r, "candidate_share"),
            "%",
            None,
            "",
            note=self._plan_note(),
        )
        self.add(
            "plan_candidate_set",
            "mean destinationCandidates set, as a share of the nodes",
            lambda r: _plan(r, "mean_candidates_share"),
            "%",
            ("<=", 100 / 3),
            "the plan's candidate sets are wide",
            note=self._plan_note(),
        )
        self.add(
            "evictions",
            f"evictions in {self.s_duration():.0f} s",
            lambda r: r["evictions"],
            "",
            None,
            "",
        )

    def s_duration(self) -> float:
        return float(self.ours[0]["duration_s"]) if self.ours else 0.0

    def _time(self, key: str, label: str, factor: float) -> None:
        up = self.upstream_median(time_to_target)
        never = _never(self.ours)
        self.add(
            key,
            label,
            time_to_target,
            "s",
            None if up is None else ("<=", round(factor * up, 1)),
            f"upstream's {describe(pick(self.upstream, time_to_target), ' s')}"
            + (f" x {factor:g}" if factor != 1 else "")
            + f"; ours' first eviction at "
            f"{describe(pick(self.ours, lambda r: r['first_eviction_s']), ' s')}"
            + (f"; never reached in {never} run(s) (counted as the run's length)" if never else ""),
            note="never reached: counted as the run's length" if never else "",
        )

    def _plan_note(self) -> str:
        with_field = any((r.get("plan") or {}).get("candidates_field") for r in self.ours)
        return "" if with_field else "the plan has no destinationCandidates yet: [destination]"

    def _plan_reason(self) -> str:
        placed = sum(int((r.get("plan") or {}).get("placed") or 0) for r in self.ours)
        on_dest = sum(int((r.get("plan") or {}).get("on_destination") or 0) for r in self.ours)
        on_cand = sum(
            int((r.get("plan") or {}).get("on_candidates_by_owner") or 0) for r in self.ours
        )
        return (
            f"{on_cand} of {placed} replacements on a candidate, {on_dest} on the destination"
            + ("; the plan carries only destination" if self._plan_note() else "")
        )

    def table(self) -> dict[str, Any]:
        rows: list[tuple[str, Callable[[Record], float | None], str]] = [
            ("evictions", lambda r: r["evictions"], ""),
            (f"evictions in the last {LAST_WINDOW:.0f} s", lambda r: r["evictions_last_60s"], ""),
            ("first / last eviction", lambda r: r["first_eviction_s"], " s"),
            ("", lambda r: r["last_eviction_s"], " s"),
            ("Deployments touched", lambda r: r["owners_touched"], ""),
            (
                f"time until no occupied node under {self.s.low:.0f} %"
                if self.s.compacts
                else f"time until no node over {self.s.high:.0f} %",
                time_to_target,
                " s",
            ),
            (f"nodes under {self.s.low:.0f} % at start / end", lambda r: r["start"]["under"], ""),
            ("", lambda r: r["end"]["under"], ""),
            ("of them holding pods, start / end", lambda r: r["start"]["under_occupied"], ""),
            ("", lambda r: r["end"]["under_occupied"], ""),
            ("empty nodes at start / end", lambda r: r["start"]["empty"], ""),
            ("", lambda r: r["end"]["empty"], ""),
            ("std. dev. of node cpu % at start / end", lambda r: r["start"]["stddev"], ""),
            ("", lambda r: r["end"]["stddev"], ""),
            ("hottest node at the end", lambda r: r["end"]["hottest"], " %"),
            ("replacements back on the node they left", lambda r: r["same_node_returns"], ""),
            ("every Deployment whole (1 = yes)", lambda r: 1 if r["deployments_whole"] else 0, ""),
            ("plan: evictions planned / not blocked", lambda r: _plan(r, "planned"), ""),
            ("", lambda r: _plan(r, "allowed"), ""),
            ("plan: planned pods evicted live / placed", lambda r: _plan(r, "evicted"), ""),
            ("", lambda r: _plan(r, "placed"), ""),
            ("plan: of those placed, with a predicted node", lambda r: _plan(r, "predicted"), ""),
            ("plan: replacement on the destination", lambda r: _plan(r, "destination_share"), " %"),
            (
                "plan: replacement on a candidate (per owner)",
                lambda r: _plan(r, "owner_candidate_share"),
                " %",
            ),
            (
                "plan: replacement on a candidate (strict)",
                lambda r: _plan(r, "candidate_share"),
                " %",
            ),
            ("plan: mean candidate set / nodes", lambda r: _plan(r, "mean_candidates_share"), " %"),
            ("set-up (s) / pods", lambda r: r["setup_s"], ""),
            ("", lambda r: r["pods"], ""),
        ]
        if not self.s.compacts:
            rows[6:6] = [
                (
                    f"nodes over {self.s.high:.0f} % at start / end",
                    lambda r: r["start"]["over"],
                    "",
                ),
                ("", lambda r: r["end"]["over"], ""),
            ]
        out: list[list[str]] = []
        for label, get, unit in rows:
            cells = [describe(pick(self.ours, get), unit), describe(pick(self.upstream, get), unit)]
            if label.startswith("time until"):
                cells = [
                    c + (f", never in {_never(runs)}" if _never(runs) else "")
                    for c, runs in zip(cells, (self.ours, self.upstream), strict=True)
                ]
            if not label and out:
                out[-1] = [
                    out[-1][0],
                    *(f"{a} / {b}" for a, b in zip(out[-1][1:], cells, strict=True)),
                ]
            else:
                out.append([label, *cells])
        return {
            "title": f"{self.s.title}: ours beside upstream's (medians of the runs)",
            "columns": [
                "measure",
                "ours",
                "upstream v0.36.0" if self.upstream else "upstream (not run)",
            ],
            "rows": out,
        }


# -- the run ----------------------------------------------------------------------------------


def run_all(
    args: argparse.Namespace, found: binaries.Binaries, workdir: Path
) -> dict[str, dict[str, list[Record]]]:
    implementations: list[tuple[str, Callable[[Path, Path], list[str]]]] = [
        (OURS_NAME, ours_command)
    ]
    if found.descheduler is not None:
        implementations.insert(0, (UPSTREAM, upstream_command(found.descheduler)))
    plane = ControlPlane(found, workdir / "controlplane")
    out: dict[str, dict[str, list[Record]]] = {}
    try:
        for name in args.scenarios:
            scenario = SCENARIOS[name]
            out[name] = {impl: [] for impl, _ in implementations}
            for index in range(args.runs):
                order = implementations if index % 2 == 0 else implementations[::-1]
                for impl, command in order:
                    started = time.monotonic()
                    record = Run(
                        scenario,
                        impl,
                        command=command,
                        plan_command=plan_command,
                        plane=plane,
                        directory=workdir / f"{name}-{impl}-{index + 1}",
                        duration=args.duration,
                    ).execute()
                    out[name][impl].append(record)
                    print(
                        f"  {name} / {impl} run {index + 1}: {record['evictions']} evictions, "
                        f"target met at {record['time_to_target_s']} s, last-60s "
                        f"{record['evictions_last_60s']}, same-node {record['same_node_returns']}, "
                        f"end sd {record['end']['stddev']:.1f}, "
                        f"whole {record['deployments_whole']}, exit {record['exit']} "
                        f"({time.monotonic() - started:.0f} s)",
                        flush=True,
                    )
    finally:
        plane.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated")
    parser.add_argument("--runs", type=int, default=1, help="runs of each implementation")
    parser.add_argument("--duration", type=float, default=150.0, help="seconds per live run")
    parser.add_argument(
        "--keep-logs", type=Path, default=None, help="keep every run's logs under this directory"
    )
    add_output_argument(parser)
    args = parser.parse_args()
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s) {sorted(unknown)}; known: {', '.join(SCENARIOS)}")
    found, why = binaries.find()
    if found is None:
        print(f"live: skipped ({why})")
        return 0
    if not OURS.exists():
        print(f"live: skipped (no {OURS}: create the repo's .venv first)")
        return 0
    if found.descheduler is None:
        print(f"live: upstream's descheduler is not in {binaries.bin_dir()}: ours runs alone")
    upstream = (
        f"{found.descheduler} ({upstream_version(found.descheduler)}; built from v0.36.0)"
        if found.descheduler
        else "not run (no binary): ours alone"
    )
    RESULTS.settings = {
        "scenarios": ", ".join(args.scenarios),
        "runs per implementation": args.runs,
        "live run (s)": f"{args.duration:g}",
        "descheduling interval": INTERVAL,
        "control plane": "kube-apiserver, kube-scheduler, kube-controller-manager v1.28.7, "
        "etcd 3.4 (Debian)",
        "upstream": upstream.replace(str(Path.home()), "~"),
    }
    if args.keep_logs:
        args.keep_logs.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="live-", dir=args.keep_logs))
    else:
        workdir = Path(tempfile.mkdtemp(prefix="kc-live-"))
    print(f"live benchmark: scenarios {args.scenarios}, {args.runs} run(s) each, logs in {workdir}")
    try:
        records = run_all(args, found, workdir)
    finally:
        if not args.keep_logs:
            shutil.rmtree(workdir, ignore_errors=True)
    for name, by_impl in records.items():
        emitter = Emitter(SCENARIOS[name], by_impl[OURS_NAME], by_impl.get(UPSTREAM, []))
        emitter.emit()
        RESULTS.tables.append(emitter.table())
    RESULTS.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
