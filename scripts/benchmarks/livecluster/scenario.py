"""One run of a scenario: an empty cluster laid out imbalanced, a plan, a descheduler, figures.

1. The control plane is reset; the kubelet stand-in brings up ``nodes`` nodes, all but the
   first ``open_nodes`` cordoned.
2. The seeded Deployments (``workload``) fill the open nodes to about ``fill`` of their cpu;
   every pod must be Running, every Deployment whole and every budget's status current. A
   compaction scenario then uncordons everything and adds a second, smaller set of
   Deployments that the scheduler (scoring LeastAllocated) spreads thin over the empty nodes.
3. Every node is uncordoned; the scheduler is switched to the scoring the run wants
   (MostAllocated for compaction). A snapshot (a ``v1`` List of nodes, pods, budgets,
   namespaces and priority classes, as kubectl prints it) is written and
   ``kubelet-companion descheduler plan`` plans on it: the plan before the live run.
4. The descheduler runs for ``duration`` seconds (a descheduler that exits on its own, e.g.
   refusing its policy, ends the run then). Utilization is sampled every second (every
   fifth sample is logged with each node's figure), every pod deletion and creation is
   recorded with its node and owner. Then it is stopped (SIGTERM) and the cluster given up to
   ``settle`` seconds to be whole again.

A usage scenario (``Scenario.usage_seed``) adds what ``usagerun`` describes: the NodeReport
CRD, the stand-in playing the agents, a real Prometheus, every node reported before the
descheduler starts, and each sample's actual usage beside requests; it plans nothing (a
plan on requests says nothing of a run balanced on usage). Every run measures the implicit
rollout budget (``rolloutbudget``) from the tracker's eviction and Ready events.

Pod names are random after every reset, so each run plans on its own snapshot. Everything a
run saw stays in its directory: the descheduler's and the stand-in's logs, samples.jsonl,
deletions.jsonl, replacements.jsonl (each eviction with its replacement and the node that
got it), rollout.jsonl (the budget's events), the snapshot, the plan, plan_outcome.json and
run.json (the figures); in a usage scenario the rendered policy, usage-factors.json and
Prometheus's configuration, log and data.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scripts.benchmarks.livecluster import measures, rolloutbudget, usage, workload
from scripts.benchmarks.livecluster.api import MERGE_PATCH, Api
from scripts.benchmarks.livecluster.controlplane import (
    STOP_SECONDS,
    ControlPlane,
    scheduler_config,
)
from scripts.benchmarks.livecluster.nodes import node_name
from scripts.benchmarks.livecluster.shadowrun import Shadow, writes_seen
from scripts.benchmarks.livecluster.tracker import PodTracker
from scripts.benchmarks.livecluster.usagerun import UsageRig
from tests.harness.childprocess import stop_process

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
NODE_CPU_MILLI = 8000
LAST_WINDOW = 60.0
SAME_NODE_WINDOW = 10.0
SAMPLE_EVERY = 1.0
LOG_EVERY = 5


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    nodes: int
    open_nodes: int
    deployments: int
    seed: int
    policy: Path
    strategy: str
    """``LowNodeUtilization`` (balance: time until no node is over ``high``) or
    ``HighNodeUtilization`` (compact: time until no node under ``low`` holds a pod)."""
    low: float
    high: float
    fill: float = 0.78
    """cpu requests on the open nodes, as a share of their capacity."""
    spread_deployments: int = 0
    spread_fill: float = 0.0
    """The second set's cpu, as a share of the nodes that were cordoned."""
    scoring: str = "LeastAllocated"
    """The scheduler's scoring while the descheduler runs."""
    namespaces: int = 8
    usage_seed: int | None = None
    """With a seed, actual usage differs from requests (``usage``): the kubelet stand-in
    writes NodeReports and serves metrics, a real Prometheus scrapes them, and balance is
    judged on actual cpu."""
    upstream_policy: Path | None = None
    """The policy upstream runs (and ours as its shadow), when it is not ``policy``."""

    @property
    def compacts(self) -> bool:
        return self.strategy == "HighNodeUtilization"

    @property
    def on_usage(self) -> bool:
        return self.usage_seed is not None


@dataclass(frozen=True)
class Launch:
    """What a descheduler's command line is made of, for one run."""

    kubeconfig: Path
    policy: Path
    """The run's own copy, placeholders filled in."""
    prometheus: str
    """Prometheus's URL ("" without one)."""
    directory: Path
    server: str
    ca_file: Path


@dataclass(frozen=True)
class Implementation:
    name: str
    """``upstream`` or ``ours``."""
    command: Callable[[Launch], list[str]]
    upstream_policy: bool = False
    """Runs the scenario's ``upstream_policy`` (upstream's own)."""
    shadow: Callable[[Launch], list[str]] | None = None
    """A dry run started right after it on the same cluster (``shadowrun``): ours on
    Prometheus beside upstream, for ``parity``."""


SCENARIOS = {
    s.name: s
    for s in (
        Scenario(
            "reference",
            "reference: 40 nodes, 14 filled to 78 %, 12 Deployments, seed 7",
            nodes=40,
            open_nodes=14,
            deployments=12,
            seed=7,
            policy=HERE / "policy-lnu-dup.yaml",
            strategy="LowNodeUtilization",
            low=20,
            high=50,
        ),
        Scenario(
            "wide",
            "wide: 60 nodes, 20 filled to 78 %, 16 Deployments, seed 11",
            nodes=60,
            open_nodes=20,
            deployments=16,
            seed=11,
            policy=HERE / "policy-lnu-dup.yaml",
            strategy="LowNodeUtilization",
            low=20,
            high=50,
        ),
        Scenario(
            "medium",
            "medium: 50 nodes, 18 filled to 78 %, 14 Deployments, seed 23",
            nodes=50,
            open_nodes=18,
            deployments=14,
            seed=23,
            policy=HERE / "policy-lnu-dup.yaml",
            strategy="LowNodeUtilization",
            low=20,
            high=50,
        ),
        Scenario(
            "compact",
            "compact: 30 nodes, 10 filled to 60 %, 20 at about 12 %, MostAllocated scheduler, "
            "seed 5",
            nodes=30,
            open_nodes=10,
            deployments=8,
            seed=5,
            policy=HERE / "policy-hnu.yaml",
            strategy="HighNodeUtilization",
            low=40,
            high=100,
            fill=0.60,
            spread_deployments=5,
            spread_fill=0.12,
            scoring="MostAllocated",
        ),
        Scenario(
            "usage",
            "usage: 40 nodes, 14 filled to 60 %, 12 Deployments, seed 7, usage seed 7",
            nodes=40,
            open_nodes=14,
            deployments=12,
            seed=7,
            fill=0.6,
            usage_seed=7,
            policy=HERE / "policy-usage-ours.yaml",
            upstream_policy=HERE / "policy-usage-upstream.yaml",
            strategy="LowNodeUtilization",
            low=20,
            high=50,
        ),
        Scenario(
            "usage-wide",
            "usage-wide: 60 nodes, 20 filled to 60 %, 16 Deployments, seed 23, usage seed 23",
            nodes=60,
            open_nodes=20,
            deployments=16,
            seed=23,
            fill=0.6,
            usage_seed=23,
            policy=HERE / "policy-usage-ours.yaml",
            upstream_policy=HERE / "policy-usage-upstream.yaml",
            strategy="LowNodeUtilization",
            low=20,
            high=50,
        ),
    )
}


def log(*parts: object) -> None:
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


class SetupError(RuntimeError):
    """The cluster could not be laid out: no figure comes from this run."""


@dataclass
class Sample:
    t: float
    spread: measures.Spread
    percent: dict[str, float]
    pending: int
    terminating: int
    evictions: int
    usage: dict[str, float] | None = None
    """Each node's actual cpu (%), in a usage scenario (``None``: not read)."""
    usage_spread: measures.Spread | None = None


class Run:
    def __init__(
        self,
        scenario: Scenario,
        implementation: Implementation,
        *,
        plan_command: Callable[[Path, Path, Path], list[str]] | None,
        plane: ControlPlane,
        directory: Path,
        duration: float,
        settle: float = 60.0,
        prometheus: Path | None = None,
    ) -> None:
        self.scenario = scenario
        self.implementation = implementation.name
        self.command = implementation.command
        self.shadow_command = implementation.shadow if scenario.on_usage else None
        self.policy = (
            scenario.upstream_policy
            if implementation.upstream_policy and scenario.upstream_policy
            else scenario.policy
        )
        # A plan on requests says nothing of a run balanced on actual usage.
        self.plan_command = None if scenario.on_usage else plan_command
        self.plane = plane
        self.directory = directory
        self.duration = duration
        self.settle = settle
        self.capacity = {node_name(i): NODE_CPU_MILLI for i in range(scenario.nodes)}
        self.api: Api | None = None
        self.tracker: PodTracker | None = None
        self.kubelets: subprocess.Popen[bytes] | None = None
        self.rig: UsageRig | None = None
        self.shadow: Shadow | None = None
        if scenario.usage_seed is not None:
            if prometheus is None:
                raise SetupError("a usage scenario needs a prometheus binary")
            self.rig = UsageRig(scenario.usage_seed, directory, prometheus)
        self.unbudgeted: dict[str, int] = {}
        """``namespace/name`` -> replicas of each Deployment without a PDB."""

    # -- set-up -----------------------------------------------------------------------------

    def _start_kubelets(self) -> None:
        s = self.scenario
        log_file = (self.directory / "kubelets.log").open("wb")
        self.kubelets = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scripts.benchmarks.livecluster.nodes",
                f"--server={self.plane.server}",
                f"--token-file={self.plane.token_file}",
                f"--ca-file={self.plane.ca_file}",
                f"--nodes={s.nodes}",
                f"--cordoned-from={s.open_nodes}",
                *(self.rig.kubelet_args() if self.rig else []),
            ],
            cwd=BENCHMARKS.parents[1],  # the repository: ``-m scripts.benchmarks...``
            stdout=subprocess.PIPE,
            stderr=log_file,
            stdin=subprocess.DEVNULL,
        )
        log_file.close()
        answer: list[bytes] = []
        stdout = self.kubelets.stdout
        reader = threading.Thread(
            target=lambda: answer.append(stdout.readline() if stdout else b"")
        )
        reader.start()
        reader.join(180)
        if not answer or answer[0].strip() != b"ready":
            raise SetupError(
                f"the kubelet stand-in is not ready; see {self.directory}/kubelets.log"
            )

    def _create(self, deployments: list[workload.Deployment]) -> int:
        api = self._api()
        existing = {n["metadata"]["name"] for n in api.list_all("/api/v1/namespaces")[0]}
        for namespace in sorted({d.namespace for d in deployments} - existing):
            api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
            path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
            self._until(lambda p=path: api.request("GET", p)[0] == 200, 60, f"{path} exists")
        for d in deployments:
            api.ok(
                "POST",
                f"/apis/apps/v1/namespaces/{d.namespace}/deployments",
                workload.deployment_body(d),
            )
            if d.budget:
                api.ok(
                    "POST",
                    f"/apis/policy/v1/namespaces/{d.namespace}/poddisruptionbudgets",
                    workload.budget_body(d),
                )
        return sum(d.replicas for d in deployments)

    def _until(self, check: Callable[[], bool], timeout: float, what: str) -> float:
        started = time.monotonic()
        while not check():
            if time.monotonic() - started > timeout:
                raise SetupError(f"not within {timeout:.0f} s: {what}")
            time.sleep(1)
        return time.monotonic() - started

    def _all_running(self, want: int) -> bool:
        running = sum(
            1
            for p in self._tracker().states()
            if p.phase == "Running" and not p.deleting and p.node
        )
        return running >= want and not self.not_whole()

    def _budgets_current(self) -> bool:
        budgets, _ = self._api().list_all("/apis/policy/v1/poddisruptionbudgets")
        return all(
            b.get("status", {}).get("observedGeneration") == b["metadata"].get("generation")
            and b.get("status", {}).get("disruptionsAllowed") == 1
            for b in budgets
        )

    def _cordon(self, *, first: int, cordoned: bool) -> None:
        api = self._api()
        for i in range(first, self.scenario.nodes):
            api.ok(
                "PATCH",
                f"/api/v1/nodes/{node_name(i)}",
                {"spec": {"unschedulable": cordoned or None}},
                content_type=MERGE_PATCH,
            )

    def set_up(self) -> dict[str, Any]:
        s = self.scenario
        started = time.monotonic()
        filled = workload.generate(s.seed, s.deployments, s.open_nodes * NODE_CPU_MILLI, s.fill)
        self.plane.reset()
        self.api = self.plane.api()
        info: dict[str, Any] = {}
        if self.rig is not None:
            self.rig.apply_crd(self.api)
            factors = self.rig.write_factors([f"{d.namespace}/{d.name}" for d in filled])
            info["hot_deployments"] = sum(1 for f in factors.values() if f > 1)
        self._start_kubelets()
        if self.rig is not None:
            self.rig.prometheus.start()
        self.tracker = PodTracker(self.api)
        self.tracker.start()
        want = self._create(filled)
        self._until(lambda: self._all_running(want), 900, f"{want} pods Running")
        if s.spread_deployments:
            self._cordon(first=s.open_nodes, cordoned=False)
            spread = workload.generate(
                s.seed + 1000,
                s.spread_deployments,
                (s.nodes - s.open_nodes) * NODE_CPU_MILLI,
                s.spread_fill,
                prefix="spread",
            )
            want += self._create(spread)
            filled += spread
            self._until(lambda: self._all_running(want), 900, f"{want} pods Running")
        self._until(self._budgets_current, 120, "every budget's status current")
        self._cordon(first=s.open_nodes, cordoned=False)
        if self.plane.scoring != s.scoring:
            self.plane.start_scheduler(s.scoring)
        time.sleep(1)
        self.unbudgeted = {f"{d.namespace}/{d.name}": d.replicas for d in filled if not d.budget}
        if self.rig is not None:
            info["usage_ready_s"] = self.rig.wait_ready(self._api(), s.nodes, time.time())
        log(
            f"{s.name}/{self.implementation}: {want} pods of {len(filled)} Deployments Running "
            f"after {time.monotonic() - started:.0f} s of set-up"
        )
        return {
            "pods": want,
            "deployments": len(filled),
            "budgets": sum(d.budget for d in filled),
            "setup_s": round(time.monotonic() - started, 1),
            **info,
        }

    # -- snapshot and plan ------------------------------------------------------------------

    def write_snapshot(self, path: Path) -> int:
        """The state as ``kubectl get nodes,pods,pdb,namespaces,priorityclasses -A -o json``."""
        api = self._api()
        items: list[dict[str, Any]] = []
        for collection, version, kind in (
            ("/api/v1/namespaces", "v1", "Namespace"),
            ("/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass"),
            ("/api/v1/nodes", "v1", "Node"),
            ("/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"),
            ("/api/v1/pods", "v1", "Pod"),
        ):
            for obj in api.list_all(collection)[0]:
                obj["apiVersion"], obj["kind"] = version, kind
                items.append(obj)
        listing = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
        with gzip.open(path, "wt", encoding="utf-8") as out:
            json.dump({**listing, "items": items}, out)
        return len(items)

    def plan(self) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
        """The offline plan on this run's snapshot: its evictions, and how it went."""
        if self.plan_command is None:
            return None, {"plan": "not run"}
        snapshot = self.directory / "snapshot.json.gz"
        objects = self.write_snapshot(snapshot)
        # The plan predicts for the scheduler the run has: its own configuration file.
        scheduler = self.directory / "scheduler-config.json"
        scheduler.write_text(
            json.dumps(scheduler_config(self.plane.kubeconfig, self.scenario.scoring)),
            encoding="utf-8",
        )
        started = time.monotonic()
        with (
            (self.directory / "plan.json").open("wb") as out,
            (self.directory / "plan.log").open("wb") as err,
        ):
            status = subprocess.run(
                self.plan_command(snapshot, self.scenario.policy, scheduler),
                stdout=out,
                stderr=err,
                check=False,
                timeout=300,
            ).returncode
        info = {"snapshot_objects": objects, "plan_s": round(time.monotonic() - started, 2)}
        if status != 0:
            log(f"plan exited with {status}; see {self.directory}/plan.log")
            return None, {**info, "plan": f"exit {status}"}
        plan = json.loads((self.directory / "plan.json").read_text(encoding="utf-8"))
        return list(plan.get("evictions") or []), info

    # -- the live run -----------------------------------------------------------------------

    def sample(self, t: float, *, actual: dict[str, float] | None = None) -> Sample:
        """The nodes now: requests from the pod cache; in a usage scenario actual usage too
        (the stand-in's latest sample, or ``actual`` when the caller read one)."""
        states = self._tracker().states()
        percent = measures.cpu_percent(states, self.capacity)
        if actual is None and self.rig is not None:
            actual = self.rig.percent(list(self.capacity))
        s = self.scenario
        return Sample(
            t=round(t, 1),
            spread=measures.spread(percent, s.low, s.high),
            percent=percent,
            pending=sum(1 for p in states if not p.deleting and p.phase != "Running"),
            terminating=sum(1 for p in states if p.deleting),
            evictions=len(self._tracker().deletions),
            usage=actual,
            usage_spread=None if actual is None else measures.spread(actual, s.low, s.high),
        )

    def not_whole(self) -> list[str]:
        items, _ = self._api().list_all("/apis/apps/v1/deployments")
        return [
            f"{d['metadata']['namespace']}/{d['metadata']['name']}"
            for d in items
            if any(
                (d.get("status", {}).get(field) or 0) != d["spec"]["replicas"]
                for field in ("replicas", "readyReplicas", "availableReplicas")
            )
        ]

    def launch(self) -> Launch:
        """The run's command-line inputs; the policy copied into the run's directory with
        Prometheus's URL and the usage metric's name in place of their placeholders."""
        prometheus = self.rig.prometheus.url if self.rig is not None else ""
        policy = self.directory / "policy.yaml"
        policy.write_text(
            self.policy.read_text(encoding="utf-8")
            .replace("{prometheus}", prometheus)
            .replace("{metric}", usage.METRIC),
            encoding="utf-8",
        )
        return Launch(
            kubeconfig=self.plane.kubeconfig,
            policy=policy,
            prometheus=prometheus,
            directory=self.directory,
            server=self.plane.server,
            ca_file=self.plane.ca_file,
        )

    def live(self) -> dict[str, Any]:
        tracker = self._tracker()
        launch = self.launch()
        command = self.command(launch)
        samples_log = (self.directory / "samples.jsonl").open("w", encoding="utf-8")
        trail: list[Sample] = []
        origin, origin_wall = tracker.record(), time.time()
        first = self.sample(0.0)
        trail.append(first)
        with (self.directory / "descheduler.log").open("wb") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        log(f"{self.scenario.name}/{self.implementation}: {' '.join(command)}")
        shadow = self._start_shadow(launch, origin)
        exit_status: int | str | None = None
        tick = 0
        while (elapsed := time.monotonic() - origin) < self.duration:
            time.sleep(max(0.0, (tick + 1) * SAMPLE_EVERY - elapsed))
            tick += 1
            current = self.sample(time.monotonic() - origin)
            trail.append(current)
            if tick % LOG_EVERY == 0:
                samples_log.write(_sample_line(current) + "\n")
                samples_log.flush()
                sp, up = current.spread, current.usage_spread
                log(
                    f"  t={current.t:5.0f}s over={sp.over} under={sp.under} "
                    f"under-occupied={sp.under_occupied} sd={sp.stddev:.1f} max={sp.hottest:.0f}% "
                    f"pending={current.pending} terminating={current.terminating} "
                    f"evictions={current.evictions}"
                    + (
                        f" | usage over={up.over} under={up.under} sd={up.stddev:.1f} "
                        f"max={up.hottest:.0f}%"
                        if up
                        else ""
                    )
                )
            if exit_status is None and process.poll() is not None:
                exit_status = process.returncode
                # Nothing evicts any more: sampling on would only add waiting.
                log(f"  the descheduler exited on its own with {exit_status}: run ends")
                break
        stopped_at = time.monotonic() - origin
        if process.poll() is None:
            stop_process(process, STOP_SECONDS)
            exit_status = "stopped"
        shadow_exit = shadow.stop() if shadow is not None else None
        settle_start = time.monotonic()
        while time.monotonic() - settle_start < self.settle:
            now = self.sample(time.monotonic() - origin)
            if now.pending == 0 and now.terminating == 0 and not self.not_whole():
                break
            time.sleep(2)
        broken = self.not_whole()
        # The end's actual usage: a stand-in sample taken once the cluster settled.
        actual = self.rig.percent_after(list(self.capacity), time.time()) if self.rig else None
        last = self.sample(time.monotonic() - origin, actual=actual)
        samples_log.write(_sample_line(last) + "\n")
        samples_log.close()
        result = self._figures(
            trail, first, last, stopped_at=stopped_at, exit_status=exit_status, broken=broken
        )
        if shadow is not None and shadow_exit is not None:
            result["shadow"] = self._shadow_record(shadow, shadow_exit, origin_wall)
        return result

    def _start_shadow(self, launch: Launch, origin: float) -> Shadow | None:
        """The dry-run shadow, started right after the measured descheduler: with the same
        interval its cycles then fall just after the measured one's."""
        if self.shadow_command is None:
            return None
        self.shadow = Shadow(self.shadow_command(launch), self.directory, origin)
        log(f"{self.scenario.name}/{self.implementation} shadow: {' '.join(self.shadow.command)}")
        return self.shadow

    def _shadow_record(
        self, shadow: Shadow, exit_status: int | str, origin_wall: float
    ) -> dict[str, Any]:
        text = (self.directory / "descheduler.log").read_text("utf-8", errors="replace")
        writes = writes_seen(self._api(), len(self._tracker().records()[0]), text)
        return shadow.record(exit_status, text, origin_wall, writes)

    def _figures(
        self,
        trail: list[Sample],
        first: Sample,
        last: Sample,
        *,
        stopped_at: float,
        exit_status: int | str | None,
        broken: list[str],
    ) -> dict[str, Any]:
        deletions, creations, bound = self._tracker().records()
        with (self.directory / "deletions.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(asdict(d)) + "\n" for d in deletions)
        evictions = [d for d in deletions if d.t <= stopped_at + 1]
        matched = measures.match_replacements(evictions, creations)
        with (self.directory / "replacements.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(
                json.dumps(
                    {
                        **asdict(d),
                        "replacement": matched[d.uid].pod if d.uid in matched else None,
                        "created_s": matched[d.uid].t if d.uid in matched else None,
                        "bound_to": bound.get(matched[d.uid].uid) if d.uid in matched else None,
                    }
                )
                + "\n"
                for d in evictions
            )
        watched = "under_occupied" if self.scenario.compacts else "over"
        balanced = measures.first_time([(s.t, getattr(s.spread, watched)) for s in trail])
        result: dict[str, Any] = {
            "exit": exit_status,
            "duration_s": self.duration,
            "evictions": len(evictions),
            "evictions_last_60s": measures.evictions_between(
                evictions, self.duration - LAST_WINDOW, stopped_at + 1
            ),
            "first_eviction_s": round(min((d.t for d in evictions), default=0.0), 1),
            "last_eviction_s": round(max((d.t for d in evictions), default=0.0), 1),
            "owners_touched": len({d.owner for d in evictions}),
            "time_to_target_s": balanced,
            "target_watched": watched,
            "same_node_returns": measures.same_node_returns(
                evictions, matched, bound, SAME_NODE_WINDOW
            ),
            "replacements_matched": len(matched),
            "start": asdict(first.spread),
            "end": asdict(last.spread),
            "deployments_whole": not broken,
            "deployments_not_whole": broken[:10],
            "pending_end": last.pending,
            "cycles": [asdict(c) for c in measures.eviction_cycles(evictions)],
            "rollout": self._rollout_figures(),
        }
        text = (self.directory / "descheduler.log").read_text(encoding="utf-8", errors="replace")
        findings = measures.log_findings(text)
        if exit_status == "stopped":
            findings.pop("tail")
        result["log"] = findings
        if self.rig is not None:
            result["usage"] = self._usage_figures(trail, first, last, evictions, stopped_at)
        return result

    def _rollout_figures(self) -> dict[str, Any]:
        """The implicit rollout budget (``rolloutbudget``): each Deployment without a PDB at
        its worst, from the watch's evictions and first Ready pods."""
        events, plain = self._tracker().rollout_events()
        with (self.directory / "rollout.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(asdict(e)) + "\n" for e in events)
        found = rolloutbudget.peaks(events, self.unbudgeted)
        worst = rolloutbudget.worst_of(found)
        return {
            "deployments": len(found),
            "peak_pct": round(100 * worst.ratio, 1) if worst else None,
            "peak_deployment": worst.deployment if worst else None,
            "peak_outstanding": worst.outstanding if worst else None,
            "peak_replicas": worst.replicas if worst else None,
            "peak_t": round(worst.t, 1) if worst and worst.t is not None else None,
            "within": all(p.within for p in found.values()),
            "over_budget": sorted(p.deployment for p in found.values() if not p.within),
            "evictions_seen": sum(1 for e in events if e.kind == rolloutbudget.EVICTED),
            "plain_deletions": plain,
        }

    def _usage_figures(
        self,
        trail: list[Sample],
        first: Sample,
        last: Sample,
        evictions: list[measures.Deletion],
        stopped_at: float,
    ) -> dict[str, Any]:
        """Balance on actual cpu: the same figures as on requests, from the stand-in's
        samples (a sample that could not be read counts as not balanced)."""
        balanced = measures.first_time(
            [(s.t, s.usage_spread.over if s.usage_spread else 1) for s in trail]
        )
        return {
            "start": asdict(first.usage_spread) if first.usage_spread else None,
            "end": asdict(last.usage_spread) if last.usage_spread else None,
            "time_to_target_s": balanced,
            "evictions": len(evictions),
            "evictions_last_60s": measures.evictions_between(
                evictions, self.duration - LAST_WINDOW, stopped_at + 1
            ),
            "unread_samples": sum(1 for s in trail if s.usage is None),
        }

    def plan_figures(self, plan: list[dict[str, Any]] | None) -> dict[str, Any] | None:
        if plan is None:
            return None
        deletions, creations, bound = self._tracker().records()
        matched = measures.match_replacements(deletions, creations)
        outcome = measures.plan_outcome(plan, deletions, matched, bound, self.scenario.nodes)
        with (self.directory / "plan_outcome.json").open("w", encoding="utf-8") as out:
            json.dump(asdict(outcome), out)
        return {
            "planned": outcome.planned,
            "allowed": outcome.allowed,
            "evicted": outcome.evicted,
            "refused_evicted": outcome.refused_evicted,
            "placed": outcome.placed,
            "predicted": outcome.predicted,
            "on_destination": outcome.on_destination,
            "on_candidates": outcome.on_candidates,
            "on_candidates_by_owner": outcome.on_candidates_by_owner,
            "owner_candidate_share": outcome.owner_candidate_share,
            "candidates_field": outcome.candidates_field,
            "candidate_share": outcome.candidate_share,
            "destination_share": outcome.destination_share,
            "mean_candidates_share": outcome.mean_candidates_share,
        }

    # -- all of it --------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            result: dict[str, Any] = {
                "scenario": self.scenario.name,
                "implementation": self.implementation,
            }
            result.update(self.set_up())
            plan, info = self.plan()
            result.update(info)
            result.update(self.live())
            result["plan"] = self.plan_figures(plan)
            (self.directory / "run.json").write_text(json.dumps(result, indent=1), "utf-8")
            return result
        finally:
            self.close()

    def close(self) -> None:
        if self.shadow is not None:
            self.shadow.stop()  # a run that failed midway leaves no dry run behind
        if self.tracker is not None:
            self.tracker.stop.set()
        if self.rig is not None:
            self.rig.stop()
        if self.kubelets is not None and self.kubelets.poll() is None:
            self.kubelets.terminate()
            try:
                self.kubelets.wait(10)
            except subprocess.TimeoutExpired:
                self.kubelets.kill()
                self.kubelets.wait()

    def _api(self) -> Api:
        if self.api is None:
            raise SetupError("no API client before set-up")
        return self.api

    def _tracker(self) -> PodTracker:
        if self.tracker is None:
            raise SetupError("no pod tracker before set-up")
        return self.tracker


def _sample_line(sample: Sample) -> str:
    line: dict[str, Any] = {
        "t": sample.t,
        **asdict(sample.spread),
        "pending": sample.pending,
        "terminating": sample.terminating,
        "evictions": sample.evictions,
        "cpu_percent": {n: round(v, 1) for n, v in sorted(sample.percent.items())},
    }
    if sample.usage_spread is not None and sample.usage is not None:
        line["usage"] = {
            **asdict(sample.usage_spread),
            "cpu_percent": {n: round(v, 1) for n, v in sorted(sample.usage.items())},
        }
    return json.dumps(line)
