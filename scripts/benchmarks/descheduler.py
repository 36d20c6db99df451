"""Benchmark: the descheduler's memory, planning time, eviction throughput and cold start.

Targets (issue 10), on synthetic clusters shaped like the parity fixture (16 CPU / 64 GiB /
110-pod nodes, 30 pods per node, skewed; objects as an API server sends them, see
``descheduler_cluster.py``), with the parity policy (LowNodeUtilization 20/50, then
RemoveDuplicates):

- peak RSS at 1k / 2k / 5k nodes: <= 260 MiB at 1k, <= 970 MiB at 5k;
- one cycle's planning with warm caches: <= 1 s at 1k, <= 5 s at 5k, growth exponent <= 1.1;
- eviction throughput, a pool of 8 against one at a time, same fake API server: >= 4x;
- cold start: decoding and indexing a 150,000-pod list from bytes: <= 3 s;
- cold start to the first cycle done at 1k nodes, against the fake API server;
- `descheduler plan` on the 1k parity state: peak RSS <= 260 MiB (``descheduler_plan.py``).

Each size runs in a fresh child process (so peak RSS is that size's alone), fed the list
bodies from files, through the caches' own decode -> project -> share -> index steps.
Same-run baselines: the child's RSS before the first byte is read; ``json.loads`` decoding
against msgspec decoding of the same bytes.

Run: .venv/bin/python -m scripts.benchmarks.descheduler [--sizes 1000,2000,5000] [--runs 3]
     [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.benchmarks import descheduler_cluster, descheduler_plan
from scripts.benchmarks.results import Results, add_output_argument

SELF = (sys.executable, "-m", "scripts.benchmarks.descheduler")
"""This benchmark as a child process (run from the repository, as ``scripts/bench`` does)."""

RESULTS = Results("descheduler", "Central descheduler")
"""The figures for scripts/bench (``--json``); the printed lines stay as they were."""
PEAK_TARGETS_MIB = {1000: 260.0, 5000: 970.0}
CYCLE_TARGETS_S = {1000: 1.0, 5000: 5.0}

POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
maxNoOfPodsToEvictTotal: 20000
profiles:
- name: default
  pluginConfig:
  - name: "DefaultEvictor"
  - name: "LowNodeUtilization"
    args:
      thresholds: {"cpu": 20, "memory": 20, "pods": 20}
      targetThresholds: {"cpu": 50, "memory": 50, "pods": 50}
  - name: "RemoveDuplicates"
  plugins:
    balance:
      enabled: ["LowNodeUtilization", "RemoveDuplicates"]
"""
POLICY_UNCAPPED = POLICY.replace("maxNoOfPodsToEvictTotal: 20000\n", "")
"""The growth exponent's policy: the total limit of 20,000 caps the work at 2k and 5k nodes
(1k plans about 15,000), so a capped cycle does not grow with the cluster."""
KINDS = ("Node", "Pod", "Namespace", "PodDisruptionBudget", "PriorityClass")


def _status_mib(field: str) -> float:
    with Path("/proc/self/status").open(encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return 0.0


def _rss_mib() -> float:
    return _status_mib("VmRSS:")


def _peak_mib() -> float:
    """This process's peak RSS (``VmHWM``). Not ``ru_maxrss``: Linux carries that across
    ``exec`` from the forking parent, which holds the generated cluster."""
    return _status_mib("VmHWM:")


# -- child: one cluster size --------------------------------------------------------------


_ANSWER = "@@"
"""Prefixes the child's answers on stdout, so a stray log line cannot be taken for one."""


def _answer(result: dict[str, Any]) -> None:
    print(_ANSWER + json.dumps(result), flush=True)


def child_size(directory: Path, decoding: str) -> None:
    """Fill the caches from the list bodies in ``directory``, answer with their figures,
    then plan a capped and an uncapped cycle for each ``cycle`` line read from stdin, until
    ``done``. The caches keep what the policy's plugins read, as ``run_descheduler``'s do.

    The parent keeps one such child per size and asks them in turn, so the cycles of every
    size are spread over the same minutes: this machine's speed drifts by a fifth from one
    minute to the next, and sizes measured one after another carried that drift into the
    growth exponent."""
    from agent.descheduler.cache.state import ClusterState, projections  # noqa: PLC0415
    from agent.descheduler.core.cycle import CycleOptions  # noqa: PLC0415
    from agent.descheduler.live.runner import plan_cycle  # noqa: PLC0415 - as the live loop plans
    from agent.descheduler.policyfile import parse_policy_text  # noqa: PLC0415

    policy = parse_policy_text(POLICY, "bench")
    state = ClusterState(None, projections(with_status=policy.reads_pod_status), decoding=decoding)  # type: ignore[arg-type]  # never connects
    caches: dict[str, Any] = {
        "Node": state.nodes,
        "Pod": state.pods,
        "Namespace": state.namespaces,
        "PodDisruptionBudget": state.disruption_budgets,
        "PriorityClass": state.priority_classes,
    }
    before = _rss_mib()
    pod_cold_start = 0.0
    for kind in KINDS:
        data = (directory / f"{kind}.json").read_bytes()
        cache = caches[kind]
        started = time.perf_counter()
        # The reflector's own steps, as its watch thread runs them on a list response.
        listing = cache.decode_page(data)
        del data
        entries = cache._project_all(listing)
        del listing
        cache._apply("REPLACE", entries, "1")
        del entries
        if kind == "Pod":
            pod_cold_start = time.perf_counter() - started
    cached, peak_cached = _rss_mib(), _peak_mib()
    uncapped = parse_policy_text(POLICY_UNCAPPED, "bench")
    snapshot = state.snapshot(time.time())  # counted in the peak even without a cycle
    _answer(
        {
            "pods": len(state.pods.store),
            "rss_before": before,
            "rss_cached": cached,
            "peak_cached": peak_cached,
            "pod_cold_start": pod_cold_start,
        }
    )
    for line in sys.stdin:
        if line.strip() != "cycle":
            break
        snapshot = state.snapshot(time.time())
        started = time.perf_counter()
        plan = plan_cycle(policy, snapshot, CycleOptions())
        cycle = time.perf_counter() - started
        evictions = len(plan.evictions)
        del plan
        started = time.perf_counter()
        plan = plan_cycle(uncapped, snapshot, CycleOptions())
        uncapped_cycle = time.perf_counter() - started
        _answer(
            {
                "cycle": cycle,
                "evictions": evictions,
                "uncapped_cycle": uncapped_cycle,
                "uncapped_evictions": len(plan.evictions),
            }
        )
        del plan
    _answer({"peak": _peak_mib()})


class SizeChild:
    """The parent's side of one ``child_size`` process."""

    def __init__(self, directory: Path) -> None:
        self.process = subprocess.Popen(
            [*SELF, "--child", "size", str(directory), "msgspec"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.figures: dict[str, Any] = {**self._read(), "cycles": [], "uncapped_cycles": []}

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None  # noqa: S101 - PIPE given
        for line in self.process.stdout:
            if line.startswith(_ANSWER):
                return json.loads(line[len(_ANSWER) :])  # type: ignore[no-any-return]
        raise RuntimeError(f"size child exited with {self.process.wait()}")

    def _send(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None  # noqa: S101 - PIPE given
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._read()

    def cycle(self) -> None:
        answer = self._send("cycle")
        self.figures["cycles"].append(answer["cycle"])
        self.figures["uncapped_cycles"].append(answer["uncapped_cycle"])
        self.figures["evictions"] = answer["evictions"]
        self.figures["uncapped_evictions"] = answer["uncapped_evictions"]

    def finish(self) -> dict[str, Any]:
        """The figures, with the process's peak RSS and the cycles' medians."""
        self.figures.update(self._send("done"))
        self.process.wait(timeout=60)
        f = self.figures
        f.setdefault("evictions", 0)
        f.setdefault("uncapped_evictions", 0)
        f["cycle"] = statistics.median(f["cycles"]) if f["cycles"] else float("nan")
        f["uncapped_cycle"] = (
            statistics.median(f["uncapped_cycles"]) if f["cycles"] else float("nan")
        )
        return f


def child_decode(path: Path, decoding: str) -> dict[str, Any]:
    """Decode + project one pod list, nothing else: the decoder choice, in isolation."""
    from agent.descheduler.cache.state import PROJECTIONS  # noqa: PLC0415
    from agent.descheduler.cache.wire import codec_for  # noqa: PLC0415

    data = path.read_bytes()
    before = _rss_mib()
    started = time.perf_counter()
    listing = json.loads(data) if decoding == "json" else codec_for("Pod").decode_page(data)
    decoded = time.perf_counter() - started
    pods = [PROJECTIONS.pod(item) for item in listing["items"]]
    total = time.perf_counter() - started
    return {
        "pods": len(pods),
        "decode": decoded,
        "total": total,
        "peak_over_bytes": _peak_mib() - before,
    }


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f} s" if values else "n/a"


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def child_cold_start(path: Path, pod_status: str) -> dict[str, Any]:
    """Cold start of the pod cache from one list body, timed whole and step by step.

    ``pod_status`` is ``lean`` for the parity policy's projection (no plugin of it reads the
    pod-state details, so the cache leaves them out: ``cache.state.projections``) or ``full``
    for a policy with PodLifeTime or the restart and failed-pod plugins.

    ``all_in`` is the reflector's own path (the page cut into items, each decoded,
    projected and shared in turn, then indexed). A second pass on a fresh cache splits it:
    the page's head, then decoding and projecting every item, then indexing. ``json_loads``
    of the same bytes is the same-run baseline (``lean`` runs only: it takes seconds): on a
    loaded machine the ratio means more than the seconds.
    """
    from agent.descheduler.cache.state import (  # noqa: PLC0415
        PROJECTIONS,
        ClusterState,
        projections,
    )
    from agent.descheduler.policyfile import parse_policy_text  # noqa: PLC0415

    lean = projections(with_status=parse_policy_text(POLICY, "b").reads_pod_status)
    chosen = PROJECTIONS if pod_status == "full" else lean
    data = path.read_bytes()
    json_loads = float("nan")
    if pod_status == "lean":
        started = time.perf_counter()
        json.loads(data)
        json_loads = time.perf_counter() - started

    cache = ClusterState(None, chosen).pods  # type: ignore[arg-type]  # never connects
    started = time.perf_counter()
    cache._apply("REPLACE", cache._project_all(cache.decode_page(data)), "1")
    all_in = time.perf_counter() - started
    pods = len(cache.store)
    del cache

    cache = ClusterState(None, chosen).pods  # type: ignore[arg-type]  # never connects
    started = time.perf_counter()
    listing = cache.decode_page(data)
    headed = time.perf_counter()
    entries = cache._project_all(listing)
    projected = time.perf_counter()
    cache._apply("REPLACE", entries, "1")
    indexed = time.perf_counter()
    return {
        "pods": pods,
        "json_loads": json_loads,
        "all_in": all_in,
        "head": headed - started,
        "project": projected - headed,
        "index": indexed - projected,
    }


# -- parent -------------------------------------------------------------------------------


def write_cluster(nodes: int, directory: Path) -> int:
    cluster = descheduler_cluster.cluster(nodes)
    for kind in KINDS:
        (directory / f"{kind}.json").write_bytes(
            descheduler_cluster.list_bytes(kind, cluster[kind])
        )
    return len(cluster["Pod"])


def run_child(*args: str) -> dict[str, Any]:
    output = subprocess.run(
        [*SELF, "--child", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _eviction_pods(count: int) -> list[dict[str, Any]]:
    from tests.harness import kubeobjects  # noqa: PLC0415

    return [kubeobjects.pod(f"p-{index}", "n1", labels={}) for index in range(count)]


def _hold_evictions(server: Any, latency: float) -> None:
    """A real API server waits for etcd to commit the pod's update before it answers an
    Eviction (upstream's 160 evictions/s one at a time, on this machine, is about 6 ms
    each); the fake answers from memory, so every Eviction is held ``latency`` seconds."""
    if latency > 0:
        server.faults.hang("POST", r"/eviction$", seconds=latency, times=None)


_NULL_SINK = open(os.devnull, "w")  # noqa: PTH123, SIM115 - a text stream for the process's whole life
"""Where the eviction benchmark's logs go: it stays open, as later runs in this process
(the cold start to a first cycle) log through the same configuration."""


async def eviction_rate(
    kubeconfig: Path, names: list[str], concurrency: int
) -> tuple[float, float]:
    """Evictions per second of ``names[1:]`` (pods on ``n1`` in ``default``) through the live
    evictor, ``concurrency`` in flight; ``names[0]`` is evicted first, untimed, so the lazy
    imports and the connection set-up of the first request are not counted. Also returns
    this process's CPU milliseconds per eviction (all its threads)."""
    from agent.telemetry.logs import configure_logging  # noqa: PLC0415

    # Logs as the descheduler writes them (JSON lines, one per eviction), to a sink that
    # costs nothing: not structlog's coloured console renderer on a terminal, which a real
    # deployment never uses and which cost more than the eviction itself.
    configure_logging(fmt="json", component="descheduler", stream=_NULL_SINK)
    return await _eviction_rate(kubeconfig, names, concurrency)


async def _eviction_rate(
    kubeconfig: Path, names: list[str], concurrency: int
) -> tuple[float, float]:
    from agent.descheduler.live.evictor import LiveEvictor  # noqa: PLC0415
    from agent.descheduler.plan.shape import PlannedEviction  # noqa: PLC0415
    from agent.kube.api import KubeApi  # noqa: PLC0415
    from agent.kube.client import AsyncKube  # noqa: PLC0415
    from agent.kube.connection import connect  # noqa: PLC0415
    from agent.kube.events import EventBroadcaster, EventRecorder  # noqa: PLC0415
    from agent.kube.ratelimit import TokenBucket  # noqa: PLC0415

    connection = connect(str(kubeconfig))
    assert connection is not None  # noqa: S101 - the fake always answers
    api = KubeApi(connection.api_client)
    kube = AsyncKube(api, workers=32)
    warmup, *plan = [
        PlannedEviction("default", name, "", "n1", "Bench", "p", "bench") for name in names
    ]
    # Events as the live loop posts them: queued, sent by the broadcaster's own worker. The
    # clock stops once every Event is posted too, so their cost stays in the figure.
    events = EventBroadcaster(
        EventRecorder(kube, component="descheduler", host="bench"),
        acquire=TokenBucket(0, 1).acquire,
    )
    worker = asyncio.create_task(events.run())
    evictor = LiveEvictor(kube, events, limiter=TokenBucket(0, 1), concurrency=concurrency)
    await evictor.evict_all([warmup])
    await events.drain(60)
    started, cpu = time.perf_counter(), time.process_time()
    results = await evictor.evict_all(plan)
    await events.drain(60)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    kube.close()
    api.close()
    assert all(r.evicted for r in results)  # noqa: S101 - a failed run is not a figure
    return len(plan) / elapsed, 1000 * cpu / len(plan)


def _pool_then_single(
    kubeconfig: Path, pods: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The pool of 8 on the first half of the pods, then one at a time on the second half,
    against the same server (``pods + 1`` each: one warms up)."""
    names = [f"p-{index}" for index in range(2 * pods + 2)]
    pooled = asyncio.run(eviction_rate(kubeconfig, names[: pods + 1], 8))
    single = asyncio.run(eviction_rate(kubeconfig, names[pods + 1 :], 1))
    return pooled, single


def eviction_throughput_in_process(
    pods: int, latency: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Pool of 8 and one at a time, the fake API server in this process (sharing its GIL)."""
    from tests.harness.fake_apiserver import FakeApiServer  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as workdir, FakeApiServer() as server:
        server.seed(_eviction_pods(2 * pods + 2))
        _hold_evictions(server, latency)
        return _pool_then_single(server.write_kubeconfig(Path(workdir) / "kubeconfig"), pods)


def serve_fake_apiserver(pods: int, latency: float, kubeconfig: Path) -> None:
    """Child: the fake API server in a process of its own, until the parent closes stdin."""
    from tests.harness.fake_apiserver import FakeApiServer  # noqa: PLC0415

    with FakeApiServer() as server:
        server.seed(_eviction_pods(pods))
        _hold_evictions(server, latency)
        server.write_kubeconfig(kubeconfig)
        print("ready", flush=True)
        sys.stdin.read()


def eviction_throughput_separate(
    pods: int, latency: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Pool of 8 and one at a time, the fake API server in a child process: the client's
    CPU is not the server's, as against a real API server."""
    with tempfile.TemporaryDirectory() as workdir:
        kubeconfig = Path(workdir) / "kubeconfig"
        args = ["--child", "apiserver", str(2 * pods + 2), str(latency), str(kubeconfig)]
        with subprocess.Popen(
            [*SELF, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as server:
            assert server.stdin is not None  # noqa: S101 - PIPE given
            assert server.stdout is not None  # noqa: S101 - PIPE given
            try:
                if server.stdout.readline().strip() != "ready":
                    raise RuntimeError("the fake API server process did not start")
                return _pool_then_single(kubeconfig, pods)
            finally:
                server.stdin.close()
                server.wait(timeout=60)


async def cold_start_first_cycle(nodes: int) -> tuple[float, int, float]:
    """Process start of the descheduler (dry run, one shot) -> its first cycle done; and how
    long seeding the fake took (``seed``: ``create`` one at a time is quadratic there)."""
    from agent.descheduler.policyfile import parse_policy_text  # noqa: PLC0415
    from agent.kube.api import KubeApi  # noqa: PLC0415
    from agent.kube.connection import connect  # noqa: PLC0415
    from tests.harness.fake_apiserver import FakeApiServer  # noqa: PLC0415
    from tests.harness.livedescheduler import run_live  # noqa: PLC0415

    cluster = descheduler_cluster.cluster(nodes)
    with tempfile.TemporaryDirectory() as workdir, FakeApiServer() as server:
        seeding = time.perf_counter()
        server.seed(
            {
                "apiVersion": _API_VERSIONS[kind],
                "kind": kind,
                **obj,
                "metadata": {
                    k: v
                    for k, v in obj["metadata"].items()
                    if k not in {"uid", "resourceVersion", "managedFields"}
                },
            }
            for kind in ("Namespace", "PriorityClass", "Node", "Pod", "PodDisruptionBudget")
            for obj in cluster[kind]
        )
        seeded = time.perf_counter() - seeding
        del cluster
        connection = connect(str(server.write_kubeconfig(Path(workdir) / "kubeconfig")))
        assert connection is not None  # noqa: S101 - the fake always answers
        api = KubeApi(connection.api_client, request_timeout=120)
        with Path(os.devnull).open("w", encoding="utf-8") as sink:  # noqa: ASYNC230 - /dev/null never blocks
            started = time.perf_counter()
            await run_live(
                parse_policy_text(POLICY, "bench"), api, out=sink, dry_run=True, output="json"
            )
            elapsed = time.perf_counter() - started
        api.close()
        return elapsed, nodes * descheduler_cluster.PODS_PER_NODE, seeded


_API_VERSIONS = {
    "Namespace": "v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "Node": "v1",
    "Pod": "v1",
    "PodDisruptionBudget": "policy/v1",
}


def print_eviction_throughput(evictions: int, latency_ms: float, runs_wanted: int) -> None:
    """Pool of 8 against one at a time, the fake API server in its own process and in ours."""
    latency = latency_ms / 1000
    for where, measure in (
        ("fake API server in its own process", eviction_throughput_separate),
        ("fake API server in this process", eviction_throughput_in_process),
    ):
        runs = [measure(evictions, latency) for _ in range(max(1, runs_wanted))]
        pooled, pooled_cpu = (statistics.median(r[0][i] for r in runs) for i in (0, 1))
        single, single_cpu = (statistics.median(r[1][i] for r in runs) for i in (0, 1))
        ratios = ", ".join(f"{r[0][0] / r[1][0]:.1f}x" for r in runs)
        RESULTS.add(
            "eviction_ratio" + ("" if "own" in where else "_in_process"),
            f"evictions/s, pool of 8 vs one at a time ({where}, {latency_ms:g} ms per Eviction)",
            [r[0][0] / r[1][0] for r in runs],
            "x",
            target=(">=", 4.0) if "own" in where else None,
            baseline=f"one at a time, same server: {single:.1f}/s against the pool's "
            f"{pooled:.1f}/s",
            why_missed=f"client CPU per eviction {pooled_cpu:.1f} ms (pool) on "
            f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}",
        )
        print(
            f"  evictions/s ({latency_ms:g} ms server latency, {where}; "
            f"medians of {len(runs)}), pool of 8: {pooled:6.1f}; one at a time: "
            f"{single:6.1f} ({pooled / single:.1f}x; runs {ratios}); "
            f"client CPU per eviction {pooled_cpu:.1f} / {single_cpu:.1f} ms"
        )


def add_cold_start_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cold-start-list-nodes",
        type=int,
        default=5000,
        help="the pod-list cold start at this size (5000: 150k pods); 0 skips it",
    )
    parser.add_argument("--cold-start-runs", type=int, default=5)
    parser.add_argument(
        "--cold-start-only", action="store_true", help="run only the pod-list cold start"
    )


def pod_list_cold_start(args: argparse.Namespace) -> None:
    """Medians over fresh processes of ``child_cold_start``; ``--cold-start-only`` exits after."""
    if args.cold_start_list_nodes:
        _pod_list_cold_start(args.cold_start_list_nodes, args.cold_start_runs)
    if args.cold_start_only:
        RESULTS.write(args.json)
        raise SystemExit(0)


def _pod_list_cold_start(nodes: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "Pod.json"
        cluster = descheduler_cluster.cluster(nodes)
        path.write_bytes(descheduler_cluster.list_bytes("Pod", cluster["Pod"]))
        del cluster
        # Interleaved, so a slow spell of the machine hits both alike.
        lean, full = [], []
        for _ in range(runs):
            lean.append(run_child("cold", str(path), "lean"))
            full.append(run_child("cold", str(path), "full"))
    _report_cold_start(lean, "lean")
    _report_cold_start(full, "full")


def _report_cold_start(results: list[dict[str, Any]], pod_status: str) -> None:
    pods = results[0]["pods"]
    median = {
        name: statistics.median(result[name] for result in results)
        for name in ("json_loads", "all_in", "head", "project", "index")
    }
    spread = ", ".join(f"{result['all_in']:.2f}" for result in results)
    micros = {name: value / pods * 1e6 for name, value in median.items()}
    split = (
        f"split: head {micros['head']:.1f}, decode + project {micros['project']:.0f}, "
        f"index {micros['index']:.1f} us/pod"
    )
    if pod_status == "lean":
        RESULTS.add(
            "cold_start",
            f"cold start: decode + project + index a {pods:,}-pod list from bytes, parity "
            f"policy (fresh processes; {split})",
            [result["all_in"] for result in results],
            "s",
            target=("<=", 3.0) if pods >= 150_000 else None,  # issue 10's target: 150k pods
            baseline=f"json.loads alone of the same bytes: {median['json_loads']:.2f} s "
            f"({median['json_loads'] / median['all_in']:.1f}x the whole cold start)",
            why_missed=f"json.loads alone takes {median['json_loads']:.2f} s of the same "
            "bytes here",
        )
    else:
        RESULTS.add(
            "cold_start_pod_status",
            f"cold start as above, the pod-state details kept (a policy with PodLifeTime, "
            f"RemoveFailedPods or RemovePodsHavingTooManyRestarts; {split})",
            [result["all_in"] for result in results],
            "s",
            baseline="the parity policy's cold start above, same runs, interleaved",
        )
    print(
        f"  cold start ({pod_status}), {pods} pods from bytes (medians of {len(results)} "
        f"processes): {median['all_in']:.2f} s ({micros['all_in']:.1f} us/pod; runs {spread}); "
        f"{split}"
        + (
            f"; same-run baseline json.loads alone {median['json_loads']:.2f} s "
            f"({median['json_loads'] / median['all_in']:.1f}x the whole cold start)"
            if pod_status == "lean"
            else ""
        )
    )


def emit_size(size: int, f: dict[str, Any]) -> None:
    """Peak RSS and planning time of one size, for ``--json``."""
    RESULTS.add(
        f"peak_rss_{size}",
        f"peak RSS (VmHWM), {size:,} nodes / {f['pods']:,} pods, caches + one cycle",
        [f["peak"]],
        "MiB",
        over="run",
        target=("<=", PEAK_TARGETS_MIB[size]) if size in PEAK_TARGETS_MIB else None,
        baseline=f"interpreter + imports {f['rss_before']:.0f} MiB; caches filled "
        f"{f['rss_cached']:.0f} MiB",
        why_missed=f"caches filled {f['rss_cached']:.0f} MiB, the rest is the cycle",
    )
    if f["cycles"]:
        RESULTS.add(
            f"cycle_{size}",
            f"one cycle's planning, warm caches, {size:,} nodes (parity policy; "
            f"{f['evictions']:,} evictions planned)",
            f["cycles"],
            "s",
            target=("<=", CYCLE_TARGETS_S[size]) if size in CYCLE_TARGETS_S else None,
            baseline=f"without the total limit: {f['uncapped_cycle']:.2f} s "
            f"({f['uncapped_evictions']:,} evictions)",
            why_missed=f"load average {os.getloadavg()[0]:.1f} during the run",
        )


def emit_decoders(decoders: dict[str, dict[str, Any]]) -> None:
    """msgspec against json.loads on the smallest size's pod list, for ``--json``."""
    if len(decoders) != 2:
        return
    fast, slow = decoders["msgspec"], decoders["json"]
    RESULTS.add(
        "decode",
        f"decoding a {fast['pods']:,}-pod list + projection, msgspec",
        [fast["total"]],
        "s",
        over="run",
        baseline=f"json.loads + projection {slow['total']:.2f} s; above the bytes "
        f"{fast['peak_over_bytes']:.0f} vs {slow['peak_over_bytes']:.0f} MiB",
    )


def round_exponents(
    figures: dict[int, dict[str, Any]], low: int, high: int, field: str
) -> list[float]:
    """The growth exponent of each round: the two sizes' cycles of one round were planned a
    few seconds apart (``SizeChild``), so each pair shares the machine's speed of the moment."""
    scale = math.log(high / low)
    return [
        math.log(slow / fast) / scale
        for fast, slow in zip(figures[low][f"{field}s"], figures[high][f"{field}s"], strict=True)
    ]


def emit_exponent(figures: dict[int, dict[str, Any]], low: int, high: int, field: str) -> None:
    """The planning growth exponent without the total limit, for ``--json``: the median of
    the rounds' exponents (a ratio against the baseline size of the same round)."""
    of_medians = math.log(figures[high][field] / figures[low][field]) / math.log(high / low)
    RESULTS.add(
        "growth_exponent",
        f"planning growth exponent {low:,} -> {high:,} nodes, without the total limit "
        "(median of the rounds' exponents)",
        round_exponents(figures, low, high, field),
        "",
        target=("<=", 1.1) if (low, high) == (1000, 5000) else None,  # issue 10: 1k -> 5k
        baseline=f"{figures[low][field]:.2f} s at {low:,}, {figures[high][field]:.2f} "
        f"s at {high:,} nodes (medians; their ratio gives {of_medians:.2f})",
        why_missed=f"load average {os.getloadavg()[0]:.1f}; the cycles of one size "
        f"spread {_spread(figures[high][f'{field}s'])}",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,5000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--evictions", type=int, default=400)
    parser.add_argument("--cold-start-nodes", type=int, default=1000)
    parser.add_argument(
        "--plan-runs", type=int, default=3, help="`plan` on the parity state (0: skip)"
    )
    parser.add_argument("--eviction-latency-ms", type=float, default=5.0)
    parser.add_argument(
        "--cycle-max-nodes", type=int, default=5000, help="plan cycles only up to this size"
    )
    add_cold_start_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--child", nargs="*")
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        if mode == "apiserver":
            serve_fake_apiserver(int(rest[0]), float(rest[1]), Path(rest[2]))
            return 0
        if mode == "size":
            child_size(Path(rest[0]), rest[1])
            return 0
        result = (  # "cold": the pod-list cold start, one run
            child_cold_start(Path(rest[0]), rest[1])
            if mode == "cold"
            else child_decode(Path(rest[0]), rest[1])
        )
        print(json.dumps(result))
        return 0
    return run_parent(args)


def _measure_sizes(
    args: argparse.Namespace,
    sizes: list[int],
    figures: dict[int, dict[str, Any]],
    decoders: dict[str, dict[str, Any]],
) -> None:
    """One ``SizeChild`` per size, cycles asked round by round; the decoders on the smallest."""
    with tempfile.TemporaryDirectory() as workdir:
        children: dict[int, SizeChild] = {}
        for size in sizes:
            directory = Path(workdir) / str(size)
            directory.mkdir()
            write_cluster(size, directory)
            children[size] = SizeChild(directory)
            if size == min(sizes):
                pod_file = str(directory / "Pod.json")
                for decoding in ("json", "msgspec"):
                    d = run_child("decode", pod_file, decoding)
                    decoders[decoding] = d
                    print(
                        f"  decoder {decoding:7s} ({d['pods']} pods): decode {d['decode']:5.2f} s, "
                        f"decode+project {d['total']:5.2f} s, peak above the bytes "
                        f"{d['peak_over_bytes']:6.1f} MiB"
                    )
            for path in directory.iterdir():
                path.unlink()
        # Round by round, every size in turn (see ``child_size``).
        for _ in range(args.runs):
            for size in sizes:
                if size <= args.cycle_max_nodes:
                    children[size].cycle()
        for size in sizes:
            figures[size] = f = children[size].finish()
            print(
                f"  {size:5d} nodes, {f['pods']:6d} pods: peak RSS {f['peak']:7.1f} MiB "
                f"(caches filled {f['rss_cached']:.1f}, their peak {f['peak_cached']:.1f}; "
                f"interpreter + imports {f['rss_before']:.1f} MiB); pod list decoded+indexed "
                f"{f['pod_cold_start']:6.2f} s; cycle (median of {len(f['cycles'])}) "
                f"{f['cycle']:6.2f} s, {f['evictions']} evictions planned; without the total "
                f"limit {f['uncapped_cycle']:6.2f} s, {f['uncapped_evictions']} evictions "
                f"(runs: {_seconds(f['cycles'])} / {_seconds(f['uncapped_cycles'])})"
            )
            emit_size(size, f)


def run_parent(args: argparse.Namespace) -> int:
    """Every measurement, each size in a child process; printed, and kept for ``--json``."""
    from agent.telemetry.logs import configure_logging  # noqa: PLC0415

    configure_logging(level="error", fmt="console", stream=sys.stderr)
    sizes = [int(size) for size in args.sizes.split(",")]
    RESULTS.settings = {
        "sizes (nodes)": args.sizes,
        "runs": args.runs,
        "evictions per run": args.evictions,
        "eviction latency (ms)": args.eviction_latency_ms,
        "cold start list (nodes)": args.cold_start_list_nodes,
        "cold start runs": args.cold_start_runs,
        "plan runs (parity state)": args.plan_runs,
    }
    print(f"descheduler benchmark ({platform.python_implementation()} {platform.python_version()})")
    pod_list_cold_start(args)
    figures: dict[int, dict[str, Any]] = {}
    decoders: dict[str, dict[str, Any]] = {}
    _measure_sizes(args, sizes, figures, decoders)
    emit_decoders(decoders)
    timed = [size for size in sizes if not math.isnan(figures[size]["cycle"])]
    if len(timed) > 1:
        low, high = min(timed), max(timed)
        for label, field in (("with", "cycle"), ("without", "uncapped_cycle")):
            ratio = figures[high][field] / figures[low][field]
            exponent = math.log(ratio) / math.log(high / low)
            rounds = round_exponents(figures, low, high, field)
            if label == "without":
                emit_exponent(figures, low, high, field)
            print(
                f"  cycle growth exponent {low} -> {high} nodes, {label} the total limit: "
                f"{statistics.median(rounds):.2f} (median of the rounds: "
                f"{', '.join(f'{e:.2f}' for e in rounds)}; of the medians {exponent:.2f})"
            )
    if args.evictions:
        print_eviction_throughput(args.evictions, args.eviction_latency_ms, args.runs)
    descheduler_plan.measure(RESULTS, args.plan_runs)
    if args.cold_start_nodes:
        elapsed, pods, seeded = asyncio.run(cold_start_first_cycle(args.cold_start_nodes))
        print(
            f"  cold start -> first cycle done, {args.cold_start_nodes} nodes / {pods} pods "
            f"on the fake API server: {elapsed:.2f} s (seeding the fake: {seeded:.1f} s)"
        )
        RESULTS.add(
            "first_cycle",
            f"cold start -> first cycle done, fake API server (dry run, one shot), "
            f"{args.cold_start_nodes:,} nodes / {pods:,} pods",
            [elapsed],
            "s",
            over="run",
            baseline=f"seeding the fake first: {seeded:.1f} s with seed()",
        )
    RESULTS.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
