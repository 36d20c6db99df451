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
Deployments, seed 7), ``medium`` (50 nodes, seed 23) and ``wide`` (60 nodes, 20 filled, 16
Deployments, seed 11), with LowNodeUtilization 20/50 then RemoveDuplicates; ``compact``
(HighNodeUtilization 40 % on cpu and memory, 10 nodes at 60 % and 20 at about 12 %, the
scheduler scoring MostAllocated); and the actual-usage scenarios ``usage`` (the reference
layout at 60 % of requests, usage seed 7) and ``usage-wide`` (60 nodes, seed 23): usage
differs from requests per Deployment (``livecluster/usage.py``), the kubelet stand-in writes
NodeReports and serves the usage to a real Prometheus (Debian's ``prometheus``; without it
these two are skipped, saying so): upstream runs on Prometheus (in a stand-in pod:
``livecluster/incluster.py``) with ours beside it on the same cluster and the same
Prometheus as a dry-run shadow (upstream's policy unchanged, ``--prometheus-url``,
``--dry-run``: ``livecluster/shadowrun.py``), and ours runs on NodeReports.

Targets (ours; upstream's figures from the same run are the baselines):

- balancing: time until no node is over 50 % <= 0.5 x upstream's; end std. dev. of node
  cpu % <= upstream's; nodes under 20 % or over 50 % at the end = 0;
- compaction: time until no node under 40 % holds a pod <= upstream's; such nodes at the
  end = 0;
- actual usage (ours on NodeReports): time until no node is over 50 % actual cpu <= 0.5 x
  upstream's, evictions, evictions in the last 60 s and the end std. dev. of actual cpu <=
  upstream's; ours on Prometheus (the shadow): in each of upstream's cycles paired with
  ours' next, evictions within 1 of upstream's, and every one of upstream's (cycle, node)
  evictions planned by ours too (``livecluster/parity.py``);
- every scenario: the largest share of a Deployment without a PDB evicted and not yet
  replaced by a Ready pod <= 25 % (its rollout's default maxUnavailable:
  ``livecluster/rolloutbudget.py``, from the pod watch's events);
- requests scenarios: evictions in the last 60 s = 0; replacements back on the node they
  left = 0; every Deployment whole at the end; replacements on one of the plan's
  ``destinationCandidates`` >= 80 % with a mean candidate set <= 1/3 of the nodes. A
  ReplicaSet's pods are alike, so its replacements are paired with its evictions at best (a
  maximum matching per owner) for the target; the strict pairing (each replacement with the
  owner's earliest unpaired eviction, in time order) is reported beside it.

A run of some scenarios keeps the others' figures from the previous results file, marked
with their date (``livecluster/carryover.py``; ``--no-carry-over`` drops them).

Skips (exit 0, no results file, as a root-only benchmark without root) when the control
plane's binaries are missing (``livecluster/binaries.py``); without upstream's descheduler
ours runs alone and the relative targets have no baseline.

Run: .venv/bin/python -m scripts.benchmarks.live [--scenarios reference,usage:2,...]
     [--runs 1] [--duration 150] [--keep-logs DIR] [--no-carry-over] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scripts.benchmarks.livecluster import binaries, carryover, incluster, parity, prometheus
from scripts.benchmarks.livecluster.controlplane import LOOPBACK, ControlPlane
from scripts.benchmarks.livecluster.rolloutbudget import DEFAULT_MAX_UNAVAILABLE
from scripts.benchmarks.livecluster.scenario import (
    LAST_WINDOW,
    SCENARIOS,
    Implementation,
    Launch,
    Run,
    Scenario,
)
from scripts.benchmarks.results import Figure, Results, Target, add_output_argument, load_average

ROOT = Path(__file__).resolve().parents[2]
OURS = ROOT / ".venv" / "bin" / "kubelet-companion"
INTERVAL_SECONDS = 15
INTERVAL = f"{INTERVAL_SECONDS}s"
UPSTREAM, OURS_NAME = "upstream", "ours"
RESULTS = Results("live", "Live loop on a real control plane")

Record = dict[str, Any]


def upstream_command(binary: Path) -> Callable[[Launch], list[str]]:
    def command(launch: Launch) -> list[str]:
        argv = [
            str(binary),
            f"--kubeconfig={launch.kubeconfig}",
            f"--policy-config-file={launch.policy}",
            f"--descheduling-interval={INTERVAL}",
            "--secure-port=0",
            "--v=2",
        ]
        if not launch.prometheus:
            return argv
        # Upstream builds its Prometheus client only in a pod: it gets a stand-in one.
        server = urllib.parse.urlsplit(launch.server)
        return incluster.wrap(
            argv,
            stand_in_dir=incluster.stand_in(launch.directory / "serviceaccount", launch.ca_file),
            host=server.hostname or LOOPBACK,
            port=server.port or 443,
        )

    return command


def ours_command(launch: Launch) -> list[str]:
    return [
        str(OURS),
        "descheduler",
        "--kubeconfig",
        str(launch.kubeconfig),
        "--policy-config-file",
        str(launch.policy),
        "--descheduling-interval",
        INTERVAL,
    ]


def shadow_command(launch: Launch) -> list[str]:
    """Ours as upstream's shadow: upstream's policy (the run's copy), told Prometheus's URL
    (outside a pod), planning and printing each cycle's plan, evicting nothing."""
    return [
        *ours_command(launch),
        "--prometheus-url",
        launch.prometheus,
        "--dry-run",
        "--output",
        "json",
    ]


def implementations(scenario: Scenario, upstream: Path | None) -> list[Implementation]:
    """Who runs a scenario: upstream (when built) and ours; on a usage scenario upstream
    reads Prometheus with ours on the same Prometheus as its dry-run shadow, and ours alone
    reads its NodeReports."""
    out = [Implementation(OURS_NAME, ours_command)]
    if upstream is not None:
        shadow = shadow_command if scenario.on_usage else None
        out.insert(
            0,
            Implementation(
                UPSTREAM, upstream_command(upstream), upstream_policy=True, shadow=shadow
            ),
        )
    return out


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


def _usage(run: Record, part: str, key: str) -> float | None:
    """A figure of the run's actual-usage record (``None`` when it has none)."""
    value = ((run.get("usage") or {}).get(part) or {}).get(key)
    return None if value is None else float(value)


def usage_time(run: Record) -> float | None:
    """When no node was over target on actual cpu any more; never counts as the run's
    length (as ``time_to_target``)."""
    use = run.get("usage")
    if not use:
        return None
    value = use.get("time_to_target_s")
    return float(run["duration_s"]) if value is None else float(value)


def _usage_never(runs: Sequence[Record]) -> int:
    return sum(1 for r in runs if r.get("usage") and r["usage"].get("time_to_target_s") is None)


def rollout_peak(run: Record) -> float | None:
    """The run's worst share (%) of a PDB-less Deployment evicted and not yet replaced."""
    value = (run.get("rollout") or {}).get("peak_pct")
    return None if value is None else float(value)


class Emitter:
    """The figures of one scenario: ours with targets, upstream's as baselines (and, on a
    usage scenario, ours on Prometheus against upstream's evictions per cycle)."""

    def __init__(self, scenario: Scenario, by_impl: dict[str, list[Record]]) -> None:
        self.s = scenario
        self.ours = by_impl.get(OURS_NAME, [])
        self.upstream = by_impl.get(UPSTREAM, [])

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
        if self.s.on_usage:
            self._emit_usage()
        elif self.s.compacts:
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
        if not self.s.on_usage:
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
            "rollout_peak",
            "largest share of a Deployment without a PDB evicted and not yet replaced "
            "(implicit rollout budget)",
            rollout_peak,
            "%",
            ("<=", 100 * DEFAULT_MAX_UNAVAILABLE),
            self._rollout_reason(),
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
        if self.s.on_usage:
            return
        self.add(
            "evictions",
            f"evictions in {self.s_duration():.0f} s",
            lambda r: r["evictions"],
            "",
            None,
            "",
        )

    def _emit_usage(self) -> None:
        """Balance on actual cpu: ours on NodeReports against upstream on Prometheus (time to
        no node over target at most half of upstream's; evictions, late evictions and the end
        std. dev. no more than upstream's), then ours on Prometheus against upstream."""
        high = f"{self.s.high:.0f} %"
        up_time = self.upstream_median(usage_time)
        never = _usage_never(self.ours)
        self.add(
            "usage_time_to_balance",
            f"time until no node is over {high} actual cpu",
            usage_time,
            "s",
            None if up_time is None else ("<=", round(0.5 * up_time, 1)),
            f"upstream's {describe(pick(self.upstream, usage_time), ' s')} x 0.5"
            + (f"; never reached in {never} run(s) (counted as the run's length)" if never else ""),
            note="never reached: counted as the run's length" if never else "",
        )
        for key, label, get, unit in (
            (
                "usage_evictions",
                f"evictions in {self.s_duration():.0f} s",
                lambda r: r["evictions"],
                "",
            ),
            (
                "usage_evictions_last_60s",
                f"evictions in the last {LAST_WINDOW:.0f} s of {self.s_duration():.0f} s",
                lambda r: r["evictions_last_60s"],
                "",
            ),
            (
                "usage_stddev_end",
                "std. dev. of node actual cpu % at the end",
                lambda r: _usage(r, "end", "stddev"),
                "pts",
            ),
        ):
            limit = self.upstream_median(get)
            self.add(
                key,
                f"{label} (balancing on actual cpu)" if key != "usage_stddev_end" else label,
                get,
                unit,
                None if limit is None else ("<=", limit),
                f"ours {describe(pick(self.ours, get))} against upstream's "
                f"{describe(pick(self.upstream, get))}; nodes over {high} at the end "
                f"{describe(pick(self.ours, lambda r: _usage(r, 'end', 'over')))}",
            )
        self._emit_parity()

    def _parities(self) -> list[tuple[Record, parity.Parity]]:
        """Each upstream run that had ours as its shadow, with the paired cycles' figures."""
        return [
            (
                r["shadow"],
                parity.compare(
                    parity.cycles_of(r["shadow"]["upstream_cycles"]),
                    parity.cycles_of(r["shadow"]["ours_cycles"]),
                    window=INTERVAL_SECONDS / 2,
                ),
            )
            for r in self.upstream
            if r.get("shadow")
        ]

    def _emit_parity(self) -> None:
        found = self._parities()
        if not found:
            return
        failures = "; ".join(
            f"exit {shadow['exit']}: {(shadow.get('log_tail') or [''])[-1][:200]}"
            for shadow, _ in found
            if shadow["exit"] != "stopped"
        )
        wrote = "; ".join(
            f"the shadow wrote: {shadow['writes']}"
            for shadow, _ in found
            if not shadow["writes"].get("none")
        )
        counts = "; ".join(
            f"ours {parity.describe_counts(p.ours)} / upstream {parity.describe_counts(p.upstream)}"
            + (
                f" (ours {p.median_lag:+g} s from upstream's cycle end)"
                if p.median_lag is not None
                else ""
            )
            + (f", {p.unpaired} cycle(s) unpaired" if p.unpaired else "")
            for _, p in found
        )
        trouble = "; ".join(part for part in (failures, wrote) if part)
        RESULTS.add(
            f"{self.s.name}_prometheus_cycle_difference",
            f"{self.s.name}: ours on Prometheus (upstream's policy, dry-run shadow on the same "
            "cluster): largest difference from upstream's evictions in a paired cycle",
            [float(p.largest_difference) for _, p in found],
            "",
            target=("<=", parity.TOLERANCE),
            baseline=f"evictions per paired cycle: {counts}",
            why_missed=(f"{trouble}; " if trouble else "") + counts,
        )
        shares = [p.same_nodes for _, p in found if p.same_nodes is not None]
        if shares:
            misses = "; ".join(", ".join(p.misses) for _, p in found if p.misses)
            RESULTS.add(
                f"{self.s.name}_prometheus_cycle_nodes",
                f"{self.s.name}: ours on Prometheus: upstream's (cycle, node) evictions that "
                "ours planned in the paired cycle too (every cycle)",
                shares,
                "%",
                target=(">=", 100),
                baseline="upstream: 100 % by definition",
                why_missed=(f"{trouble}; " if trouble else "") + f"missed: {misses}"[:400],
            )

    def _rollout_reason(self) -> str:
        worst = max(self.ours, key=lambda r: rollout_peak(r) or 0.0, default=None)
        rollout = (worst or {}).get("rollout") or {}
        if rollout.get("peak_pct") is None:
            return ""
        return (
            f"{rollout['peak_outstanding']} of {rollout['peak_replicas']} pods of "
            f"{rollout['peak_deployment']} evicted and not yet replaced at "
            f"{rollout['peak_t']} s; over 25 %: {', '.join(rollout['over_budget'])[:200]}"
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
        rows = self._usage_rows() if self.s.on_usage else self._request_rows()
        rows += [
            (
                "rollout: worst share of a PDB-less Deployment evicted, not replaced",
                rollout_peak,
                " %",
            ),
            ("rollout: evictions seen / deletions that were not", _rollout("evictions_seen"), ""),
            ("", _rollout("plain_deletions"), ""),
            ("load average (1 min) at start / end", _load(0), ""),
            ("", _load(-1), ""),
        ]
        groups = [self.ours, self.upstream]
        columns = ["measure", "ours", "upstream v0.36.0" if self.upstream else "upstream (not run)"]
        if self.s.on_usage:
            columns[1:] = ["ours on NodeReports", "upstream v0.36.0 on Prometheus"]
        out: list[list[str]] = []
        for label, get, unit in rows:
            cells = [describe(pick(runs, get), unit) for runs in groups]
            if label.startswith("time until"):
                count = _usage_never if self.s.on_usage else _never
                cells = [
                    c + (f", never in {count(runs)}" if count(runs) else "")
                    for c, runs in zip(cells, groups, strict=True)
                ]
            if not label and out:
                out[-1] = [
                    out[-1][0],
                    *(f"{a} / {b}" for a, b in zip(out[-1][1:], cells, strict=True)),
                ]
            else:
                out.append([label, *cells])
        out += self._text_rows(groups)
        return {
            "title": f"{self.s.title}: ours beside upstream's (medians of the runs)",
            "columns": columns,
            "rows": out,
        }

    def _usage_rows(self) -> list[tuple[str, Callable[[Record], float | None], str]]:
        high, low = f"{self.s.high:.0f} %", f"{self.s.low:.0f} %"
        return [
            ("evictions", lambda r: r["evictions"], ""),
            (f"evictions in the last {LAST_WINDOW:.0f} s", lambda r: r["evictions_last_60s"], ""),
            ("first / last eviction", lambda r: r["first_eviction_s"], " s"),
            ("", lambda r: r["last_eviction_s"], " s"),
            ("Deployments touched", lambda r: r["owners_touched"], ""),
            ("cycles with evictions", lambda r: len(r["cycles"]), ""),
            (f"time until no node over {high} actual cpu", usage_time, " s"),
            (f"nodes over {high} actual cpu at start / end", _usage_of("start", "over"), ""),
            ("", _usage_of("end", "over"), ""),
            (f"nodes under {low} actual cpu at start / end", _usage_of("start", "under"), ""),
            ("", _usage_of("end", "under"), ""),
            ("std. dev. of node actual cpu % at start / end", _usage_of("start", "stddev"), ""),
            ("", _usage_of("end", "stddev"), ""),
            ("hottest node's actual cpu at the end", _usage_of("end", "hottest"), " %"),
            ("std. dev. of node cpu requests % at start / end", lambda r: r["start"]["stddev"], ""),
            ("", lambda r: r["end"]["stddev"], ""),
            ("replacements back on the node they left", lambda r: r["same_node_returns"], ""),
            ("every Deployment whole (1 = yes)", lambda r: 1 if r["deployments_whole"] else 0, ""),
            ("log lines: usage errors / Prometheus errors", _log("usage_errors"), ""),
            ("", _log("prometheus_errors"), ""),
            ("set-up (s) / pods", lambda r: r["setup_s"], ""),
            ("", lambda r: r["pods"], ""),
        ]

    def _text_rows(self, groups: list[list[Record]]) -> list[list[str]]:
        """What a median cannot say: each run's rollout peak (and whether it stayed within
        25 %); on a usage scenario how each run ended and its evictions per cycle."""
        rows = [
            [
                "rollout: peak per run (Deployment; within 25 %?)",
                *("; ".join(_rollout_text(r) for r in runs) or "—" for runs in groups),
            ]
        ]
        if not self.s.on_usage:
            return rows
        return [
            *rows,
            [
                "exit (per run)",
                *(", ".join(str(r["exit"]) for r in runs) or "—" for runs in groups),
            ],
            [
                "evictions per cycle (per run)",
                *(
                    "; ".join(
                        parity.describe_counts([c["evictions"] for c in r["cycles"]], 8)
                        for r in runs
                    )
                    or "—"
                    for runs in groups
                ),
            ],
            [
                "ours on Prometheus as upstream's dry-run shadow: evictions per paired cycle, "
                "ours / upstream (per run)",
                "—",
                "; ".join(
                    f"{parity.describe_counts(p.ours, 8)} / {parity.describe_counts(p.upstream, 8)}"
                    for _, p in self._parities()
                )
                or "—",
            ],
        ]

    def _request_rows(self) -> list[tuple[str, Callable[[Record], float | None], str]]:
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
        return rows


def _rollout_text(run: Record) -> str:
    rollout = run.get("rollout") or {}
    if rollout.get("peak_pct") is None:
        return "no PDB-less Deployment"
    name = str(rollout["peak_deployment"]).rsplit("/", 1)[-1]
    return f"{rollout['peak_pct']:g} % {name} ({'yes' if rollout['within'] else 'no'})"


def _usage_of(part: str, key: str) -> Callable[[Record], float | None]:
    return lambda r: _usage(r, part, key)


def _rollout(key: str) -> Callable[[Record], float | None]:
    return lambda r: (r.get("rollout") or {}).get(key)


def _log(key: str) -> Callable[[Record], float | None]:
    return lambda r: (r.get("log") or {}).get(key)


def _load(index: int) -> Callable[[Record], float | None]:
    def get(run: Record) -> float | None:
        load = (run.get("load_average") or {}).get("start" if index == 0 else "end") or []
        return float(load[0]) if load else None

    return get


# -- the run ----------------------------------------------------------------------------------


def summary_line(record: Record) -> str:
    """One line per run on stdout, as it ends."""
    text = (
        f"{record['evictions']} evictions, target met at {record['time_to_target_s']} s, "
        f"last-60s {record['evictions_last_60s']}, same-node {record['same_node_returns']}, "
        f"end sd {record['end']['stddev']:.1f}, whole {record['deployments_whole']}, "
        f"exit {record['exit']}"
    )
    use = record.get("usage")
    if use and use.get("end"):
        text += (
            f"; actual cpu: none over at {use['time_to_target_s']} s, sd "
            f"{use['start']['stddev']:.1f} -> {use['end']['stddev']:.1f}"
        )
    rollout = record["rollout"]
    text += f"; rollout peak {rollout['peak_pct']} % ({rollout['peak_deployment']})"
    tail = (record.get("log") or {}).get("tail")
    if tail:
        text += f"; log ends: {tail[-1][:160]}"
    return text


def run_all(
    args: argparse.Namespace,
    found: binaries.Binaries,
    workdir: Path,
    prometheus_binary: Path | None,
) -> dict[str, dict[str, list[Record]]]:
    plane = ControlPlane(found, workdir / "controlplane")
    out: dict[str, dict[str, list[Record]]] = {}
    try:
        for name, runs in args.plan:
            scenario = SCENARIOS[name]
            who = implementations(scenario, found.descheduler)
            out[name] = {impl.name: [] for impl in who}
            for index in range(runs):
                for impl in who if index % 2 == 0 else who[::-1]:
                    started, load = time.monotonic(), load_average()
                    directory = workdir / f"{name}-{impl.name}-{index + 1}"
                    record = Run(
                        scenario,
                        impl,
                        plan_command=plan_command,
                        plane=plane,
                        directory=directory,
                        duration=args.duration,
                        prometheus=prometheus_binary,
                    ).execute()
                    record["load_average"] = {"start": load, "end": load_average()}
                    # Kept with the run, so that --records shows it too.
                    (directory / "run.json").write_text(json.dumps(record, indent=1), "utf-8")
                    out[name][impl.name].append(record)
                    print(
                        f"  {name} / {impl.name} run {index + 1}: {summary_line(record)} "
                        f"({time.monotonic() - started:.0f} s, load {load[:1]})",
                        flush=True,
                    )
    finally:
        plane.stop()
    return out


def parse_scenarios(text: str, runs: int) -> list[tuple[str, int]]:
    """``reference,usage:2`` -> ``[("reference", runs), ("usage", 2)]``."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, count = part.partition(":")
        out.append((name, int(count) if count else runs))
    return out


def carry_over(path: Path | None, ran: list[str]) -> list[str]:
    """Copy the scenarios this run left out from the previous results file (``carryover``);
    the scenarios carried."""
    if path is None or not path.exists():
        return []
    previous = json.loads(path.read_text(encoding="utf-8"))
    figures, tables, kept = carryover.carried(previous, ran, list(SCENARIOS))
    for figure in figures:
        target = figure.get("target")
        RESULTS.figures.append(Figure(**{**figure, "target": Target(**target) if target else None}))
    RESULTS.tables.extend(tables)
    return kept


def settings(
    args: argparse.Namespace, found: binaries.Binaries, prometheus_binary: Path | None
) -> dict[str, Any]:
    upstream = (
        f"{found.descheduler} ({upstream_version(found.descheduler)}; built from v0.36.0)"
        if found.descheduler
        else "not run (no binary): ours alone"
    )
    out: dict[str, Any] = {
        "scenarios": ", ".join(
            f"{name} ({runs} run{'s' * (runs != 1)})" for name, runs in args.plan
        ),
        "live run (s)": f"{args.duration:g}",
        "descheduling interval": INTERVAL,
        "control plane": "kube-apiserver, kube-scheduler, kube-controller-manager v1.28.7, "
        "etcd 3.4 (Debian)",
        "upstream": upstream.replace(str(Path.home()), "~"),
    }
    if prometheus_binary and any(SCENARIOS[name].on_usage for name, _ in args.plan):
        out["prometheus"] = f"{prometheus_binary} (scraping every {prometheus.SCRAPE_SECONDS} s)"
    return out


def plan_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[tuple[str, int]]:
    try:
        plan = parse_scenarios(args.scenarios, args.runs)
    except ValueError:
        parser.error(f"--scenarios: runs must be a whole number in {args.scenarios!r}")
    unknown = {name for name, _ in plan} - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s) {sorted(unknown)}; known: {', '.join(SCENARIOS)}")
    return plan


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help="comma-separated; NAME:N runs that one N times (else --runs)",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs of each implementation")
    parser.add_argument("--duration", type=float, default=150.0, help="seconds per live run")
    parser.add_argument(
        "--keep-logs", type=Path, default=None, help="keep every run's logs under this directory"
    )
    parser.add_argument(
        "--records",
        type=Path,
        default=None,
        help="run nothing: emit the figures of the runs kept in this --keep-logs directory "
        "(their run.json files)",
    )
    parser.add_argument(
        "--no-carry-over",
        action="store_true",
        help="do not keep the scenarios this run leaves out from the previous --json file",
    )
    add_output_argument(parser)
    return parser


def load_records(directory: Path) -> dict[str, dict[str, list[Record]]]:
    """The runs a ``--keep-logs`` directory holds (``<scenario>-<implementation>-<n>/``), by
    scenario and implementation in run order; stamps ``RESULTS`` with when the first began
    and the load average then."""
    paths = sorted(
        directory.glob("*/run.json"), key=lambda p: int(p.parent.name.rsplit("-", 1)[-1])
    )
    out: dict[str, dict[str, list[Record]]] = {}
    began: list[tuple[float, list[float]]] = []
    for path in paths:
        record = json.loads(path.read_text(encoding="utf-8"))
        out.setdefault(record["scenario"], {}).setdefault(record["implementation"], []).append(
            record
        )
        live_start = (path.parent / "policy.yaml").stat().st_mtime
        load = (record.get("load_average") or {}).get("start") or []
        began.append((live_start - float(record["setup_s"]), load))
    if began:
        RESULTS.started, RESULTS.load_start = min(began)
    return {name: out[name] for name in SCENARIOS if name in out}


def emit_records(args: argparse.Namespace) -> int:
    """``--records``: the figures of kept runs, as the run that made them would have."""
    records = load_records(args.records)
    if not records:
        print(f"live: no run.json under {args.records}")
        return 2
    args.plan = [(name, len(next(iter(by.values())))) for name, by in records.items()]
    found, _ = binaries.find()
    if found is None:
        print("live: the control plane's binaries are gone; settings name no upstream")
    RESULTS.settings = {
        "records": f"the runs kept in {args.records}",
        "scenarios": ", ".join(f"{name} ({runs} runs)" for name, runs in args.plan),
    }
    if found is not None:
        RESULTS.settings = {**settings(args, found, prometheus.find()[0]), **RESULTS.settings}
    return finish(args, records)


def finish(args: argparse.Namespace, records: dict[str, dict[str, list[Record]]]) -> int:
    for name, by_impl in records.items():
        emitter = Emitter(SCENARIOS[name], by_impl)
        emitter.emit()
        RESULTS.tables.append(emitter.table())
    if not args.no_carry_over and (kept := carry_over(args.json, list(records))):
        RESULTS.settings["kept from the previous run"] = ", ".join(kept)
    RESULTS.write(args.json)
    return 0


def main() -> int:
    parser = arguments()
    args = parser.parse_args()
    if args.records is not None:
        return emit_records(args)
    args.plan = plan_of(parser, args)
    found, why = binaries.find()
    if found is None:
        print(f"live: skipped ({why})")
        return 0
    if not OURS.exists():
        print(f"live: skipped (no {OURS}: create the repo's .venv first)")
        return 0
    if found.descheduler is None:
        print(f"live: upstream's descheduler is not in {binaries.bin_dir()}: ours runs alone")
    prometheus_binary, no_prometheus = prometheus.find()
    skipped = [name for name, _ in args.plan if SCENARIOS[name].on_usage and not prometheus_binary]
    if skipped:
        print(f"live: usage scenario(s) {', '.join(skipped)} skipped ({no_prometheus})")
        args.plan = [(name, runs) for name, runs in args.plan if name not in skipped]
    RESULTS.settings = settings(args, found, prometheus_binary)
    if skipped:
        RESULTS.settings["skipped"] = f"{', '.join(skipped)} ({no_prometheus})"
    if args.keep_logs:
        args.keep_logs.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="live-", dir=args.keep_logs))
    else:
        workdir = Path(tempfile.mkdtemp(prefix="kc-live-"))
    print(f"live benchmark: {RESULTS.settings['scenarios']}, logs in {workdir}")
    try:
        records = run_all(args, found, workdir, prometheus_binary)
    finally:
        if not args.keep_logs:
            shutil.rmtree(workdir, ignore_errors=True)
    return finish(args, records)


if __name__ == "__main__":
    sys.exit(main())
