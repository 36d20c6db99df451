"""Benchmark: what the agent costs its node and the API server, in a real-sized cluster.

Targets (issue 13): steady RSS <= 64 MiB; CPU <= 0.5 % of one core (idle and under churn
shown apart); CPU time of one ``/metrics`` scrape <= 20 ms; no cluster-wide pod list or
watch; RSS after 30 min of churn no higher than after 2 min (the leak check; the full run
only, shorter runs say which window they used).

Setup: the real agent process, started by its console entrypoint as the systemd unit starts
it (``kubelet-companion agent --config ...``), with the readiness gate, the NodeReport
(5 s samples, 60 s heartbeat), the swap audit (LimitedSwap; a fixture cgroup v2 tree with a
cgroup per pod of the node, swap on) and the metrics listener on; graceful shutdown on too
when the logind harness can run (root, dbus-daemon, systemd-logind), else off (said so).
The fake API server runs in its own process (``footprint_cluster.py``) holding ``--nodes``
nodes of 30 pods, the agent's node with ``--node-pods`` pods and three critical
DaemonSets. After ``/readyz`` turns OK and a warm-up, the run alternates idle and churn
phases (``--phase`` s each; churn is ``--churn`` pods per minute created, made Ready and
deleted on the node) for ``--duration`` s, scraping ``/metrics`` every 15 s; then, for the
leak check, churn continues until ``--leak-minutes`` have passed.

How it measures (the agent's process, from outside):
- CPU share: ``utime + stime`` from ``/proc/<pid>/stat`` over 15 s windows (one scrape
  each), median per phase, and the whole run's average;
- RSS: ``VmRSS`` from ``/proc/<pid>/status`` every second, median over the run;
- one scrape's CPU: the agent's CPU just before and just after a ``GET /metrics``, from a
  cpuacct cgroup the benchmark puts the agent in (ns resolution, every thread, even the
  handler thread that has exited), else ``/proc/<pid>/stat`` (10 ms ticks: the mean of
  many scrapes is then the figure). Baseline: the same for ``GET /healthz``;
- start-up: process start -> ``/readyz`` OK (every watch listed and synced). Baseline:
  process start -> ``/healthz`` OK (interpreter, imports, listener; no cluster work);
- API load: the fake server's request log (requests per minute by verb and resource,
  response body bytes the agent received, every list and watch with its selectors).
Baseline for RSS: a fresh interpreter that imports what the agent imports, same run.

Run: .venv/bin/python -m scripts.benchmarks.footprint [--duration 120] [--nodes 1000]
     [--leak-minutes 30] [--json bench-results/footprint.json]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.benchmarks.footprint_apiload import CLUSTER_WIDE_REASONS, ApiLoad, api_load
from scripts.benchmarks.results import Results, add_output_argument
from tests.harness.cgroups import CgroupTreeBuilder
from tests.harness.hosttree import HostTree
from tests.harness.ports import free_port

GIB = 2**30
MIB = 2**20
SCRAPE_SECONDS = 15.0
TICK = os.sysconf("SC_CLK_TCK")
HERE = Path(__file__).resolve().parent
QOS_DIRS = {"Guaranteed": "guaranteed", "Burstable": "burstable", "BestEffort": "besteffort"}


# -- the agent's process, seen from outside ------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """``utime + stime`` of every thread, living or exited, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class CpuAccount:
    """The agent's CPU time at ns resolution: a cpuacct (v1) or cgroup v2 group of its own,
    as systemd gives a unit; ``None`` from ``open`` where no group can be made (not root)."""

    def __init__(self, directory: Path, usage_file: str) -> None:
        self.directory = directory
        self.usage_file = usage_file

    @classmethod
    def open(cls, pid: int) -> CpuAccount | None:
        candidates = [
            (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"),
            (Path("/sys/fs/cgroup"), "cpu.stat"),
        ]
        for root, usage in candidates:
            if not (root / usage).exists() and not (root / "cgroup.procs").exists():
                continue
            directory = root / f"kc-footprint-{pid}"
            try:
                directory.mkdir()
                (directory / "cgroup.procs").write_text(f"{pid}\n")
            except OSError:
                with contextlib.suppress(OSError):
                    directory.rmdir()
                continue
            if (directory / usage).exists():
                return cls(directory, usage)
        return None

    def seconds(self) -> float:
        text = (self.directory / self.usage_file).read_text(encoding="ascii")
        if self.usage_file == "cpuacct.usage":
            return int(text) / 1e9
        usage = dict(line.split() for line in text.splitlines())
        return int(usage["usage_usec"]) / 1e6

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.directory.rmdir()


def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


# -- set-up -----------------------------------------------------------------------------


class FakeCluster:
    """``footprint_cluster.py`` in a child process: seeded, then driven over stdin."""

    def __init__(self, workdir: Path, nodes: int, node_pods: int) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scripts.benchmarks.footprint_cluster",
                str(self.kubeconfig),
                str(nodes),
                str(node_pods),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None  # noqa: S101 - PIPE given
        line = self.process.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError("the fake API server process did not start")
        self.facts: dict[str, Any] = json.loads(line[len("ready ") :])
        self.pid = self.process.pid

    def command(self, text: str) -> str:
        assert self.process.stdin is not None  # noqa: S101 - PIPE given
        assert self.process.stdout is not None  # noqa: S101 - PIPE given
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        return "" if text.startswith("churn") else self.process.stdout.readline().strip()

    def churn(self, per_minute: float) -> None:
        self.command(f"churn {per_minute:g}")

    def request_log(self, path: Path) -> list[dict[str, Any]]:
        self.command(f"dump {path}")
        with path.open(encoding="utf-8") as lines:
            return [json.loads(line) for line in lines]

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.command("quit")
        self.process.wait(timeout=60)


def build_host(root: Path, pods: list[dict[str, Any]]) -> HostTree:
    """A fixture host: cgroup v2 with a kubepods tree holding the node's pods, 4 GiB of swap."""
    host = HostTree(root).standard(swap_total=4 * GIB)
    host.swaps(("/swapfile", "file", 4 * 2**20, 0, -2))
    for resource in ("cpu", "memory", "io"):
        host.write(
            f"proc/pressure/{resource}",
            "some avg10=0.50 avg60=0.40 avg300=0.30 total=1234\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        )
    host.write("proc/stat", "cpu  4000 0 0 6000 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    tree = CgroupTreeBuilder(host.root / "sys/fs/cgroup", "systemd")
    tree.system_slice()
    for number, pod in enumerate(pods):
        qos = QOS_DIRS.get(pod["qos"], "besteffort")
        for cid in pod["containers"]:
            tree.add_container(pod["uid"], qos, cid)  # type: ignore[arg-type]
        tree.pod_usage(
            pod["uid"],
            qos,  # type: ignore[arg-type]
            usage_usec=number * 1_000_003,
            memory_current=(64 + number) * MIB,
            inactive_file=8 * MIB,
        )
    return host


def agent_config(
    workdir: Path, host: HostTree, *, port: int, node: str, kubeconfig: Path, shutdown: bool
) -> Path:
    paths = host.paths
    document = {
        "nodeName": node,
        "kubeconfig": str(kubeconfig),
        "metricsBindAddress": f"127.0.0.1:{port}",
        "stateDir": str(workdir / "state"),
        "logFormat": "json",
        "hostPaths": {"proc": str(paths.proc), "sys": str(paths.sys), "etc": str(paths.etc)},
        "memorySwap": {
            "swapBehavior": "LimitedSwap",
            "cgroupDriver": "systemd",
            "kubeletConfigPath": str(workdir / "kubelet-config.yaml"),
        },
        "readiness": {"enabled": True},
        "report": {"sampleInterval": "5s", "heartbeat": "60s"},
        "shutdown": {"logindDropInPath": str(workdir / "logind.conf.d" / "99-kc.conf")},
    }
    if not shutdown:
        document["shutdownGracePeriod"] = "0s"
    path = workdir / "agent.yaml"
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


@contextlib.contextmanager
def logind_bus() -> Iterator[tuple[str | None, str]]:
    """The logind harness's bus address (graceful shutdown on), or ``None`` and why not."""
    from tests.harness.logind.fixtures import unavailable_reason  # noqa: PLC0415

    reason = unavailable_reason()
    if reason is not None:
        yield None, reason
        return
    from tests.harness.logind import LogindHarness  # noqa: PLC0415

    with LogindHarness(inhibit_delay_max_sec=60) as harness:
        yield harness.bus_address, "logind harness (private bus)"


def agent_python(choice: str) -> tuple[Path, str]:
    """The interpreter of the venv the agent runs from, and what that install is.

    ``runtime`` (the default): ``.venv-agent``, the package with its runtime dependencies
    only, as an install on a node has; built here on first use (about a minute) and reused
    while ``pyproject.toml`` is unchanged. ``test``: this venv, whose test extras add
    modules the agent's dependencies import when present (``rich`` through structlog,
    ``kubernetes-validate`` through the kubernetes client), a few MiB of RSS.
    """
    if choice == "test":
        return Path(sys.executable), "the test venv (test extras importable: a few MiB more RSS)"
    root = HERE.parents[1]
    venv = root / ".venv-agent"
    stamp = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    python = venv / "bin" / "python"
    if not python.exists() or (venv / "pyproject.sha256").read_text().strip() != stamp:
        print("building .venv-agent (runtime dependencies only) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-e", str(root)],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        (venv / "pyproject.sha256").write_text(stamp + "\n")
    return python, ".venv-agent (runtime dependencies only, as installed on a node)"


def import_floor_mib(python: Path) -> float:
    """RSS of a fresh interpreter that imported what the agent imports (same run)."""
    code = (
        "import agent.cli, agent.daemon, kubernetes.client, dbus_fast.aio, prometheus_client\n"
        "for line in open('/proc/self/status'):\n"
        "    if line.startswith('VmRSS:'): print(int(line.split()[1]) / 1024)\n"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


# -- the run ------------------------------------------------------------------------------


@dataclass
class Window:
    phase: str
    start: float
    end: float
    cpu: float

    @property
    def share(self) -> float:
        return 100 * self.cpu / (self.end - self.start)


@dataclass
class Run:
    rss: list[tuple[float, float]] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    scrapes: list[float] = field(default_factory=list)
    healthz: list[float] = field(default_factory=list)
    scrape_bytes: int = 0
    started: float = 0.0
    measured_from: float = 0.0
    measured_to: float = 0.0
    cpu_from: float = 0.0
    cpu_to: float = 0.0
    healthz_ok: float = 0.0
    readyz_ok: float = 0.0
    precise: bool = False
    log_at_start: list[dict[str, Any]] = field(default_factory=list)
    """The fake server's request log when the measured run began (after the warm-up)."""
    metrics: str = ""
    """The last /metrics body."""
    first_metrics: str = ""
    """The first /metrics body of the measured run."""


class Agent:
    def __init__(
        self, python: Path, config: Path, kubeconfig: Path, bus: str | None, log: Path
    ) -> None:
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "KUBERNETES_SERVICE_HOST": "",
            "DBUS_SYSTEM_BUS_ADDRESS": bus or "unix:path=/nonexistent",
        }
        entrypoint = python.parent / "kubelet-companion"
        with log.open("wb") as out:
            self.started = time.monotonic()
            self.process = subprocess.Popen(
                [str(entrypoint), "agent", "--config", str(config)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.pid = self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_ok(agent: Agent, port: int, path: str, timeout: float = 300.0) -> float:
    """Seconds from the agent's start until ``path`` answers 200 (polled every 10 ms)."""
    while time.monotonic() - agent.started < timeout:
        if not agent.alive():
            raise RuntimeError(f"the agent exited with {agent.process.returncode}")
        with contextlib.suppress(OSError):
            if _get(port, path)[0] == 200:
                return time.monotonic() - agent.started
        time.sleep(0.01)
    raise RuntimeError(f"{path} not OK within {timeout} s")


def timed_get(port: int, path: str, clock: Any) -> tuple[float, int]:
    before = clock()
    status, body = _get(port, path)
    after = clock()
    if status != 200:
        raise RuntimeError(f"{path} answered {status}")
    return after - before, len(body)


def schedule(args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """(phase, start, end) offsets: idle/churn alternating for ``duration``, then churn."""
    phases = []
    offset = 0.0
    index = 0
    while offset < args.duration - 1e-9:
        end = min(offset + args.phase, args.duration)
        phases.append(("idle" if index % 2 == 0 else "churn", offset, end))
        offset, index = end, index + 1
    leak_end = max(args.duration, args.leak_minutes * 60)
    if leak_end > args.duration:
        phases.append(("churn", args.duration, leak_end))
    return phases


def run_agent(
    agent: Agent, cluster: FakeCluster, port: int, args: argparse.Namespace, workdir: Path
) -> Run:
    run = Run(started=agent.started)
    run.healthz_ok = wait_ok(agent, port, "/healthz")
    run.readyz_ok = wait_ok(agent, port, "/readyz")
    account = CpuAccount.open(agent.pid)
    run.precise = account is not None
    clock = account.seconds if account is not None else (lambda: cpu_seconds(agent.pid))
    try:
        time.sleep(args.warmup)
        run.log_at_start = cluster.request_log(workdir / "requests-start.jsonl")
        t0 = time.monotonic()
        run.measured_from, run.cpu_from = t0, cpu_seconds(agent.pid)
        next_scrape = t0
        for phase, start, end in schedule(args):
            cluster.churn(args.churn if phase == "churn" else 0)
            window_start, window_cpu = t0 + start, cpu_seconds(agent.pid)
            while time.monotonic() < t0 + end:
                if not agent.alive():
                    raise RuntimeError(f"the agent exited with {agent.process.returncode}")
                now = time.monotonic()
                if now >= next_scrape:
                    cpu, size = timed_get(port, "/metrics", clock)
                    if not run.first_metrics:
                        run.first_metrics = _get(port, "/metrics")[1].decode()
                    run.scrapes.append(cpu)
                    run.scrape_bytes = size
                    run.healthz.append(timed_get(port, "/healthz", clock)[0])
                    next_scrape += SCRAPE_SECONDS
                run.rss.append((time.monotonic() - t0, rss_mib(agent.pid)))
                if time.monotonic() - window_start >= SCRAPE_SECONDS - 1e-3 or (
                    t0 + end - time.monotonic() < 1.0
                ):
                    now, cpu_now = time.monotonic(), cpu_seconds(agent.pid)
                    if now - window_start >= SCRAPE_SECONDS / 2:
                        run.windows.append(Window(phase, window_start, now, cpu_now - window_cpu))
                    window_start, window_cpu = now, cpu_now
                time.sleep(max(0.0, min(1.0, t0 + end - time.monotonic())))
        cluster.churn(0)
        run.measured_to, run.cpu_to = time.monotonic(), cpu_seconds(agent.pid)
        run.metrics = _get(port, "/metrics")[1].decode()
    finally:
        if account is not None:
            agent.stop()
            account.close()
    return run


# -- figures ------------------------------------------------------------------------------


def _median_rss(run: Run, start: float, end: float) -> tuple[float, list[float]]:
    values = [rss for at, rss in run.rss if start <= at < end]
    return (statistics.median(values) if values else float("nan")), values


def figures(
    results: Results,
    run: Run,
    *,
    load: ApiLoad,
    startup: ApiLoad,
    floor: float,
    args: argparse.Namespace,
) -> None:
    rss_values = [rss for at, rss in run.rss if at < args.duration]
    rss_median = statistics.median(rss_values)
    results.add(
        "rss",
        "steady RSS (VmRSS, every second)",
        rss_values,
        "MiB",
        over="1 s samples",
        target=("<=", 64.0),
        baseline=f"interpreter + the agent's imports: {floor:.1f} MiB",
        why_missed=f"the imports alone take {floor:.1f} of the {rss_median:.1f} MiB; "
        f"the agent's own data is {rss_median - floor:.1f} MiB",
    )
    total_share = 100 * (run.cpu_to - run.cpu_from) / (run.measured_to - run.measured_from)
    for phase in ("idle", "churn"):
        shares = [w.share for w in run.windows if w.phase == phase]
        if not shares:
            continue
        churn = (
            f", {args.churn:g} pods/min created, made Ready, deleted" if phase == "churn" else ""
        )
        results.add(
            f"cpu_{phase}",
            f"CPU, share of one core, {phase}{churn}",
            shares,
            "%",
            over="15 s windows",
            target=("<=", 0.5),
            baseline=f"whole run: {total_share:.2f} %",
            why_missed=_cpu_reason(run, phase),
        )
    results.add(
        "cpu_average",
        "CPU, share of one core, whole run average (utime+stime / wall)",
        [w.share for w in run.windows],
        "%",
        value=total_share,
        over="15 s windows",
        target=("<=", 0.5),
        baseline=f"of which /metrics scrapes: {_scrape_share(run):.3f} %",
        why_missed=_cpu_reason(run, "run"),
    )
    resolution = "cgroup cpuacct, ns" if run.precise else "/proc/<pid>/stat, 10 ms ticks"
    scrape_ms = [1000 * s for s in run.scrapes]
    healthz_ms = [1000 * s for s in run.healthz]
    results.add(
        "scrape_cpu",
        f"CPU time of one /metrics scrape ({run.scrape_bytes:,} bytes; {resolution})",
        scrape_ms,
        "ms",
        value=statistics.median(scrape_ms) if run.precise else statistics.fmean(scrape_ms),
        over="scrapes",
        target=("<=", 20.0),
        baseline=f"one /healthz request: {statistics.median(healthz_ms):.2f} ms",
        why_missed=f"{run.scrape_bytes:,} bytes of exposition text per scrape",
    )
    results.add(
        "startup",
        "start -> /readyz OK (list + watch sync with the cluster)",
        [run.readyz_ok],
        "s",
        over="run",
        baseline=f"start -> /healthz OK (imports, listener): {run.healthz_ok:.2f} s",
    )
    results.add(
        "api_requests",
        "API requests per minute, steady (all verbs)",
        [load.requests_per_minute],
        "/min",
        over="run",
        baseline=f"start-up and warm-up: {startup.requests_per_minute * startup.minutes:.0f} "
        "requests",
    )
    results.add(
        "api_bytes",
        "bytes received from the API server per minute, steady",
        [load.bytes_per_minute / 1024],
        "KiB/min",
        over="run",
        baseline=f"start-up and warm-up (initial lists): {startup.bytes_total / 1024:,.0f} KiB",
    )
    cluster_wide = [c for c, _ in load.scopes + startup.scopes if c.scope == "cluster"]
    results.add(
        "cluster_pod_watches",
        "cluster-wide pod lists and watches",
        [float(load.cluster_wide_pods + startup.cluster_wide_pods)],
        "",
        over="run",
        target=("<=", 0.0),
        baseline=f"{len({(c.resource, c.namespace) for c in cluster_wide})} cluster-wide "
        "(non-pod) list/watch kinds, each explained below",
        why_missed="a pod list or watch without spec.nodeName sends every pod of the cluster",
    )
    leak_start = 120.0 if args.leak_minutes * 60 >= 600 else min(30.0, args.duration / 4)
    leak_end = max(args.duration, args.leak_minutes * 60)
    before, early = _median_rss(run, leak_start - 30, leak_start)
    after, _ = _median_rss(run, leak_end - 30, leak_end + 1)
    noise = (max(early) - min(early)) if early else 0.0
    results.add(
        "leak",
        f"RSS growth: after {leak_end / 60:g} min against after {leak_start / 60:g} min "
        "(medians of the 30 s before each)",
        [after - before],
        "MiB",
        over="run",
        target=("<=", 2.0),
        baseline=f"RSS {before:.1f} -> {after:.1f} MiB; spread in the first window {noise:.1f} MiB",
        why_missed=f"RSS grew from {before:.1f} to {after:.1f} MiB",
        note="" if args.leak_minutes >= 30 else "a shortened leak window; the full run: 30 min",
    )


def _scrape_share(run: Run) -> float:
    return 100 * sum(run.scrapes) / (run.measured_to - run.measured_from)


def _metric(body: str, prefix: str) -> float:
    for line in body.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _cpu_reason(run: Run, phase: str) -> str:
    """Why the CPU share is what it is, from the agent's own metrics and the scrapes."""
    shares = [w.share for w in run.windows if phase in {w.phase, "run"}]
    audits = _metric(run.metrics, _AUDITS) - _metric(run.first_metrics, _AUDITS)
    minutes = (run.measured_to - run.measured_from) / 60
    last = 1000 * _metric(run.metrics, "kubelet_companion_swap_audit_duration_seconds ")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"{phase} windows {min(shares):.2f}-{max(shares):.2f} %; swap audits "
        f"{audits / minutes:.1f}/min over the run (one per pod start or stop; the last took "
        f"{last:.1f} ms wall); /metrics scrapes {_scrape_share(run):.3f} points; load average "
        f"at the end {load}"
    )


_AUDITS = 'kubelet_companion_swap_audits_total{result="success"}'


def api_tables(results: Results, load: ApiLoad, startup: ApiLoad) -> None:
    verbs = sorted(set(load.rates) | set(startup.rates))
    results.tables.append(
        {
            "title": "API requests by verb and resource",
            "columns": ["verb", "resource", "steady (per min)", "start-up (count)"],
            "rows": [
                [
                    verb,
                    resource,
                    f"{load.rates.get((verb, resource), 0):.2f}",
                    f"{startup.rates.get((verb, resource), 0) * startup.minutes:.0f}",
                ]
                for verb, resource in verbs
            ],
        }
    )
    scopes: dict[Any, int] = {}
    for call, count in startup.scopes + load.scopes:
        scopes[call] = scopes.get(call, 0) + count
    results.tables.append(
        {
            "title": "Every list and watch, and its scope",
            "columns": ["verb", "resource", "namespace", "selectors", "scope", "why", "count"],
            "rows": [
                [
                    call.verb,
                    call.resource,
                    call.namespace or "(all)",
                    call.selectors or "(none)",
                    call.scope,
                    "this node only"
                    if call.scope == "node"
                    else CLUSTER_WIDE_REASONS.get(call.resource, "UNEXPLAINED"),
                    str(count),
                ]
                for call, count in scopes.items()
            ],
        }
    )


def metric_facts(body: str) -> dict[str, str]:
    """What the agent itself reported about the fixture node (so the run says what it did)."""
    facts = {}
    for line in body.splitlines():
        if line.startswith("kubelet_companion_cgroup_mode{") and line.endswith(" 1.0"):
            facts["cgroup mode seen by the agent"] = line.split('"')[1]
        elif line.startswith('kubelet_companion_swap_audits_total{result="success"}'):
            facts["swap audits"] = line.rsplit(" ", 1)[1]
        elif line.startswith("kubelet_companion_report_writes_total{"):
            reason = line.split('reason="')[1].split('"')[0]
            facts[f"NodeReport writes ({reason})"] = line.rsplit(" ", 1)[1]
    return facts


def show(results: Results) -> None:
    for figure in results.figures:
        status = f" [{figure.status}: {figure.reason}]" if figure.status else ""
        print(
            f"  {figure.label}: {figure.value:.3f} {figure.unit} (min {figure.low:.3f}, "
            f"max {figure.high:.3f}, n={figure.count}){status} {figure.baseline}"
        )
    for table in results.tables:
        print(f"  {table['title']}:")
        for row in table["rows"]:
            print("    " + " | ".join(row))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--node-pods", type=int, default=110)
    parser.add_argument("--duration", type=float, default=120.0, help="idle/churn phases, s")
    parser.add_argument("--phase", type=float, default=30.0, help="seconds per phase")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--churn", type=float, default=12.0, help="pods per minute")
    parser.add_argument(
        "--leak-minutes", type=float, default=0.0, help="churn until then (the full run: 30)"
    )
    parser.add_argument(
        "--agent-venv",
        choices=("runtime", "test"),
        default="runtime",
        help="runtime: .venv-agent, runtime dependencies only (built once); test: this venv",
    )
    parser.add_argument("--agent-log", type=Path, default=None, help="keep the agent's log here")
    add_output_argument(parser)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    results = Results("footprint", "Agent footprint")
    results.settings = {
        "nodes": args.nodes,
        "pods per node": 30,
        "pods on the agent's node": args.node_pods,
        "run (s)": args.duration,
        "phase (s)": args.phase,
        "churn (pods/min)": args.churn,
        "leak window (min)": args.leak_minutes or args.duration / 60,
    }
    with tempfile.TemporaryDirectory(prefix="kc-bench-footprint-") as tmp, logind_bus() as bus:
        workdir = Path(tmp)
        python, install = agent_python(args.agent_venv)
        results.settings["agent install"] = install
        floor = import_floor_mib(python)
        seeding = time.monotonic()
        cluster = FakeCluster(workdir, args.nodes, args.node_pods)
        try:
            print(
                f"fake API server seeded in {time.monotonic() - seeding:.1f} s "
                f"({cluster.facts['objects']} pods and nodes); shutdown: {bus[1]}",
                flush=True,
            )
            results.settings["objects in the fake"] = cluster.facts["objects"]
            results.settings["graceful shutdown"] = "on, " + bus[1] if bus[0] else "off: " + bus[1]
            host = build_host(workdir / "host", cluster.facts["pods"])
            port = free_port()
            config = agent_config(
                workdir,
                host,
                port=port,
                node=cluster.facts["node"],
                kubeconfig=cluster.kubeconfig,
                shutdown=bus[0] is not None,
            )
            agent = Agent(python, config, cluster.kubeconfig, bus[0], workdir / "agent.log")
            try:
                run = run_agent(agent, cluster, port, args, workdir)
            except BaseException:
                print((workdir / "agent.log").read_text(errors="replace")[-4000:], file=sys.stderr)
                raise
            finally:
                agent.stop()
                if args.agent_log is not None:
                    shutil.copyfile(workdir / "agent.log", args.agent_log)
            log = cluster.request_log(workdir / "requests.jsonl")
            print(f"request log: {len(log)} requests", flush=True)
        finally:
            cluster.close()
    startup = api_load(run.log_at_start, 0.0, run.measured_from)
    steady = api_load(log, run.measured_from, run.measured_to, run.log_at_start)
    results.settings.update(metric_facts(run.metrics))
    figures(results, run, load=steady, startup=startup, floor=floor, args=args)
    api_tables(results, steady, startup)
    show(results)
    results.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
