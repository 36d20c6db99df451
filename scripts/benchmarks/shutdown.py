"""Benchmark: graceful node shutdown, from logind's signal to the first delete and the release.

Targets (shutdown issue):
- median time from PrepareForShutdown(true) to the first pod DELETE request <= 100 ms;
- median overhead of the shutdown beyond the pods' own termination <= 1 s.

Setup: the real systemd-logind harness (private bus, systemd1 stand-in) and the fake API
server over HTTP, with the shutdown controller wired as the agent wires it (real
kubeconfig, client, NodeState reflectors, NodePatcher, EventRecorder). Each round creates
``--pods`` pods spread over three priority buckets, waits until NodeState has them and the
agent holds its lock, then calls logind's PowerOff. The fake kubelet removes each pod after
its grace period times ``--time-scale``. The systemd1 stand-in ends the poweroff job, so
logind sends PrepareForShutdown(false) and the agent takes its lock again for the next round.

Times are ``time.monotonic`` in this process (the harness records signals, the fake server
records requests, the fake kubelet records removals):
- signal -> first DELETE: PrepareForShutdown(true) seen by the harness -> the first pod
  DELETE in the server's request log;
- pods' own termination: first DELETE -> last pod removed (the part the pods decide);
- overhead: (signal -> StartUnit(poweroff.target), i.e. the lock released) minus the pods'
  own termination: what the agent adds on top of the pods.

Baselines, measured in the same run:
- floor for the first DELETE: a bare dbus-fast listener, subscribed to the same signal in
  the same process, that sends one DELETE through the same client stack on receipt;
- the pods' own termination, for the ratio of the whole shutdown to it;
- logind's own PowerOff -> StartUnit with no lock held at all (the floor of any release).

Deadline precision (the integration tests assert only the hard bounds, the numbers are
here): a second controller with buckets of 1 s and 1 s and a stuck pod in each, so every
phase runs to its deadline:
- phase deadline -> the next phase's first DELETE (how late a phase starts);
- budget end -> StartUnit (how late the lock goes; the hard invariant is "by the budget").
And a node-only controller (no cluster): PrepareForShutdown(true) -> StartUnit, against
logind's own floor.

Needs root (the logind harness).
Run: .venv/bin/python -m scripts.benchmarks.shutdown [--rounds N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus
from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config import AgentConfig, parse_document
from agent.daemon import build_cluster
from agent.kube.api import KubeApi
from agent.kube.connection import connect
from agent.kube.resources import PODS
from agent.node.paths import HostPaths
from agent.runtime.context import KubeContext
from agent.shutdown.controller import ShutdownController
from agent.shutdown.metrics import ShutdownMetrics
from agent.telemetry.health import Health
from agent.telemetry.logs import configure_logging
from scripts.benchmarks.results import Results, add_output_argument
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer, FakeKubelet
from tests.harness.logind import LogindHarness

NODE = "bench-node"
OTHER_NODE = "elsewhere"
BUCKETS = ((0, 10), (1000, 10), (100000, 10))
DEADLINE_BUCKETS = ((0, 1), (1000, 1))
NODE_ONLY_BUCKETS = ((0, 3), (1000, 3))
PRIORITY_CLASSES = {"bench-low": 0, "bench-mid": 1000, "bench-high": 100000}


def pod(name: str, node: str, priority_class: str, grace: int) -> dict[str, Any]:
    """A Running pod of ``priority_class`` on ``node``, ``grace`` seconds to stop."""
    return kubeobjects.pod(
        name,
        node,
        priority_class=priority_class,
        grace_seconds=grace,
        image="registry.example/app:1",
        phase="Running",
    )


async def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout} s")
        await asyncio.sleep(0.005)


class BareListener:
    """The floor: react to PrepareForShutdown(true) with one DELETE, nothing else."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.target: str | None = None
        self.bus: MessageBus | None = None
        self.sent_at: float | None = None

    async def start(self, address: str) -> None:
        self.bus = await MessageBus(bus_type=BusType.SYSTEM, bus_address=address).connect()
        self.bus.add_message_handler(self._on_message)
        rule = (
            "type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForShutdown'"
        )
        await self.bus.call(
            Message(
                destination="org.freedesktop.DBus",
                path="/org/freedesktop/DBus",
                interface="org.freedesktop.DBus",
                member="AddMatch",
                signature="s",
                body=[rule],
            )
        )

    def _on_message(self, message: Message) -> bool:
        if (
            message.message_type is MessageType.SIGNAL
            and message.member == "PrepareForShutdown"
            and message.body[0] is True
            and self.target is not None
        ):
            target, self.target = self.target, None
            asyncio.get_running_loop().run_in_executor(None, self._delete, target)
        return False

    def _delete(self, name: str) -> None:
        self.api.delete(PODS, name, "default", grace_period_seconds=1)

    def stop(self) -> None:
        if self.bus is not None:
            self.bus.disconnect()


async def bare_poweroff_rounds(logind: LogindHarness, rounds: int) -> list[float]:
    """logind's own PowerOff -> StartUnit with no inhibitor (the floor for the overhead)."""
    samples = []
    for _ in range(rounds):
        since = time.monotonic()
        await asyncio.to_thread(logind.power_off)
        signalled = await logind.wait_for_prepare_for_shutdown_async(True, 5, since=since)
        start = await logind.systemd1.wait_for_call_async("StartUnit", timeout=5, since=since)
        await logind.wait_for_prepare_for_shutdown_async(False, 5, since=start.time)
        samples.append(start.time - signalled)
    return samples


async def agent_round(
    index: int,
    *,
    logind: LogindHarness,
    server: FakeApiServer,
    kubelet: FakeKubelet,
    controller: ShutdownController,
    listener: BareListener,
    pods: int,
    grace: int,
) -> dict[str, float]:
    cluster = controller.cluster
    if cluster is None:
        raise RuntimeError("the benchmark needs the cluster side")
    names = []
    classes = list(PRIORITY_CLASSES)
    for number in range(pods):
        name = f"r{index}-p{number}"
        names.append(name)
        server.create(pod(name, NODE, classes[number % len(classes)], grace))
    floor_pod = f"r{index}-floor"
    server.create(pod(floor_pod, OTHER_NODE, "bench-low", 30))
    listener.target = floor_pod
    state = cluster.node_state
    await wait_until(lambda: len(state.pod_list()) == pods, 10, "NodeState sync")
    await wait_until(lambda: controller.logind.keeper.held, 10, "the agent's lock")
    await wait_until(lambda: not controller.cluster or not _tainted(server), 10, "taint removal")

    since = time.monotonic()
    await asyncio.to_thread(logind.power_off)
    signalled = await logind.wait_for_prepare_for_shutdown_async(True, 5, since=since)
    start = await logind.systemd1.wait_for_call_async("StartUnit", timeout=60, since=since)
    await logind.wait_for_prepare_for_shutdown_async(False, 5, since=start.time)

    deletes = server.requests("DELETE", predicate=lambda r: r.monotonic >= since)
    ours = [r.monotonic for r in deletes if r.path.rsplit("/", 1)[1] in names]
    floor = [r.monotonic for r in deletes if r.path.endswith("/" + floor_pod)]
    removed = kubelet.removed()
    last_removed = max(removed[("default", name)] for name in names)
    first_delete = min(ours)
    own_termination = last_removed - first_delete
    total = start.time - signalled
    return {
        "first_delete": first_delete - signalled,
        "floor_delete": (floor[0] - signalled) if floor else float("nan"),
        "own_termination": own_termination,
        "total": total,
        "overhead": total - own_termination,
    }


def _tainted(server: FakeApiServer) -> bool:
    node = server.get("nodes", NODE)
    return any(
        t.get("key") == "kubelet-companion.io/shutting-down"
        for t in (node.get("spec") or {}).get("taints") or []
    )


def bench_config(
    root: Path,
    logind: LogindHarness,
    buckets: tuple[tuple[int, int], ...],
    kubeconfig: Path | None,
) -> AgentConfig:
    lines = "\n".join(f"  - {{priority: {p}, shutdownGracePeriodSeconds: {s}}}" for p, s in buckets)
    cluster = f"kubeconfig: {kubeconfig}\n" if kubeconfig is not None else ""
    return parse_document(
        AgentConfig,
        f"nodeName: {NODE}\nstateDir: {root / 'state'}\n{cluster}"
        f"shutdownGracePeriodByPodPriority:\n{lines}\n"
        f"shutdown:\n  logindDropInPath: {logind.dropin_dir / '99-zz-kubelet-companion.conf'}\n",
        "bench",
    )


def new_controller(config: AgentConfig, cluster: KubeContext | None) -> ShutdownController:
    return ShutdownController(
        config=config,
        node_name=NODE,
        paths=HostPaths(),
        metrics=ShutdownMetrics(CollectorRegistry()),
        health=Health(),
        clock=SystemClock(),
        cluster=cluster,
    )


@asynccontextmanager
async def running(
    controller: ShutdownController, cluster: KubeContext | None
) -> AsyncIterator[None]:
    """The controller (and its NodeState reflectors) running; its lock held on entry."""
    tasks = [asyncio.create_task(r.run()) for r in cluster.node_state.reflectors] if cluster else []
    tasks.append(asyncio.create_task(controller.run()))
    try:
        if cluster is not None:
            await asyncio.wait_for(cluster.node_state.wait_synced(), 10)
        await wait_until(lambda: controller.logind.keeper.held, 10, "the agent's lock")
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if cluster is not None:
            cluster.kube.close()


async def deadline_round(
    index: int,
    *,
    logind: LogindHarness,
    server: FakeApiServer,
    kubelet: FakeKubelet,
    controller: ShutdownController,
) -> dict[str, float]:
    """Stuck pods in both phases: every phase runs to its deadline."""
    low, mid = f"d{index}-low", f"d{index}-mid"
    server.create(pod(low, NODE, "bench-low", 30))
    server.create(pod(mid, NODE, "bench-mid", 30))
    for name in (low, mid):
        kubelet.stick("default", name)
    await wait_until(lambda: {low, mid} <= names_now(controller), 10, "NodeState sync")
    await wait_until(lambda: controller.logind.keeper.held, 10, "the agent's lock")
    await wait_until(lambda: not _tainted(server), 10, "taint removal")

    since = time.monotonic()
    await asyncio.to_thread(logind.power_off)
    signalled = await logind.wait_for_prepare_for_shutdown_async(True, 5, since=since)
    start = await logind.systemd1.wait_for_call_async("StartUnit", timeout=30, since=since)
    await logind.wait_for_prepare_for_shutdown_async(False, 5, since=start.time)
    mid_deletes = server.requests(
        "DELETE", predicate=lambda r: r.monotonic >= since and r.path.endswith("/" + mid)
    )
    first_phase, budget = DEADLINE_BUCKETS[0][1], sum(s for _, s in DEADLINE_BUCKETS)
    for name in (low, mid):
        kubelet.unstick("default", name)
    for name in (low, mid):
        await asyncio.to_thread(kubelet.wait_removed, "default", name, 10)
    return {
        "next_phase_late": min(r.monotonic for r in mid_deletes) - (signalled + first_phase),
        "release_late": start.time - (signalled + budget),
    }


def names_now(controller: ShutdownController) -> set[str]:
    cluster = controller.cluster
    if cluster is None:
        raise RuntimeError("the benchmark needs the cluster side")
    return {p["metadata"]["name"] for p in cluster.node_state.pod_list()}


async def node_only_rounds(logind: LogindHarness, root: Path, rounds: int) -> list[float]:
    """No cluster: PrepareForShutdown(true) -> StartUnit, i.e. the agent's bare overhead."""
    controller = new_controller(bench_config(root, logind, NODE_ONLY_BUCKETS, None), None)
    samples = []
    async with running(controller, None):
        for _ in range(rounds):
            await wait_until(lambda: controller.logind.keeper.held, 10, "the agent's lock")
            since = time.monotonic()
            await asyncio.to_thread(logind.power_off)
            signalled = await logind.wait_for_prepare_for_shutdown_async(True, 5, since=since)
            start = await logind.systemd1.wait_for_call_async("StartUnit", timeout=10, since=since)
            await logind.wait_for_prepare_for_shutdown_async(False, 5, since=start.time)
            samples.append(start.time - signalled)
    return samples


async def run(args: argparse.Namespace) -> int:
    configure_logging(level="warning", fmt="console", stream=sys.stderr)
    with (
        tempfile.TemporaryDirectory() as scratch,
        LogindHarness(inhibit_delay_max_sec=60) as logind,
        FakeApiServer() as server,
    ):
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = logind.bus_address
        root = Path(scratch)
        bare = await bare_poweroff_rounds(logind, args.rounds)

        for name, value in PRIORITY_CLASSES.items():
            server.create(kubeobjects.priority_class(name, value))
        kubelet = server.kubelet(NODE, time_scale=args.time_scale)
        server.kubelet(OTHER_NODE)
        kubeconfig = server.write_kubeconfig(root / "kubeconfig")
        config = bench_config(root / "phases", logind, BUCKETS, kubeconfig)
        cluster = build_cluster(config, NODE)
        connection = connect(str(kubeconfig))
        if cluster is None or connection is None:
            raise RuntimeError("the fake API server's kubeconfig did not load")
        controller = new_controller(config, cluster)
        listener = BareListener(KubeApi(connection.api_client))
        await listener.start(logind.bus_address)
        try:
            async with running(controller, cluster):
                results = [
                    await agent_round(
                        index,
                        logind=logind,
                        server=server,
                        kubelet=kubelet,
                        controller=controller,
                        listener=listener,
                        pods=args.pods,
                        grace=args.grace,
                    )
                    for index in range(args.rounds)
                ]
                await wait_until(lambda: not _tainted(server), 10, "taint removal")
        finally:
            listener.stop()

        config = bench_config(root / "deadlines", logind, DEADLINE_BUCKETS, kubeconfig)
        cluster = build_cluster(config, NODE)
        if cluster is None:
            raise RuntimeError("the fake API server's kubeconfig did not load")
        controller = new_controller(config, cluster)
        async with running(controller, cluster):
            deadlines = [
                await deadline_round(
                    index, logind=logind, server=server, kubelet=kubelet, controller=controller
                )
                for index in range(args.rounds)
            ]
            await wait_until(lambda: not _tainted(server), 10, "taint removal")
        node_only = await node_only_rounds(logind, root / "node-only", args.rounds)
    report(args, results, bare, deadlines, node_only)
    return 0


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(value: float) -> str:
    return f"{value * 1000:8.1f} ms"


def report(
    args: argparse.Namespace,
    results: list[dict[str, float]],
    bare: list[float],
    deadlines: list[dict[str, float]],
    node_only: list[float],
) -> None:
    column = {key: [r[key] for r in results] for key in results[0]}
    first, floor = median(column["first_delete"]), median(column["floor_delete"])
    overhead = median(column["overhead"])
    own, total = median(column["own_termination"]), median(column["total"])
    print(
        f"graceful shutdown benchmark: {args.rounds} rounds, {args.pods} pods in 3 phases, "
        f"grace {args.grace} s, fake kubelet time scale {args.time_scale}"
    )
    print(f"{'':44}{'median':>11}{'min':>11}{'max':>11}")
    rows = [
        ("PrepareForShutdown(true) -> first DELETE", column["first_delete"]),
        ("  floor: bare listener's DELETE", column["floor_delete"]),
        ("pods' own termination", column["own_termination"]),
        ("PrepareForShutdown(true) -> StartUnit", column["total"]),
        ("overhead beyond the pods", column["overhead"]),
        ("  floor: logind PowerOff -> StartUnit", bare),
    ]
    late = {key: [r[key] for r in deadlines] for key in deadlines[0]}
    rows += [
        ("phase deadline -> next phase's first DELETE", late["next_phase_late"]),
        ("budget end -> StartUnit (stuck pods)", late["release_late"]),
        ("node-only: PrepareForShutdown -> StartUnit", node_only),
    ]
    for label, values in rows:
        print(f"{label:44}{ms(median(values))}{ms(min(values))}{ms(max(values))}")
    emit(args, column, bare, late, node_only)
    print()
    print(
        f"first DELETE: median {first * 1000:.1f} ms (target <= 100 ms: "
        f"{'met' if first <= 0.1 else 'MISSED'}), {first / floor:.2f}x the bare listener"
    )
    print(
        f"overhead: median {overhead * 1000:.1f} ms (target <= 1000 ms: "
        f"{'met' if overhead <= 1.0 else 'MISSED'}); the whole shutdown took "
        f"{total / own:.3f}x the pods' own termination "
        f"(logind alone: {median(bare) * 1000:.2f} ms from PowerOff to StartUnit)"
    )
    print(
        f"deadlines ({'/'.join(str(s) for _, s in DEADLINE_BUCKETS)} s buckets, stuck pods): "
        f"next phase {median(late['next_phase_late']) * 1000:.1f} ms after its predecessor's "
        f"deadline, lock released {median(late['release_late']) * 1000:.1f} ms after the "
        f"budget's end (median); node-only release "
        f"{median(node_only) * 1000:.1f} ms after the signal, "
        f"{median(node_only) / median(bare):.1f}x logind's own PowerOff -> StartUnit"
    )


def emit(
    args: argparse.Namespace,
    column: dict[str, list[float]],
    bare: list[float],
    late: dict[str, list[float]],
    node_only: list[float],
) -> None:
    """The figures as JSON (``--json``), for scripts/bench's BENCHMARKS.md."""
    results = Results("shutdown", "Graceful shutdown")
    results.settings = {
        "rounds": args.rounds,
        "pods per round": args.pods,
        "grace (s)": args.grace,
        "fake kubelet time scale": args.time_scale,
    }
    floor, own = median(column["floor_delete"]), median(column["own_termination"])
    results.add(
        "first_delete",
        "PrepareForShutdown(true) -> first pod DELETE",
        [1000 * v for v in column["first_delete"]],
        "ms",
        target=("<=", 100.0),
        baseline=f"a bare dbus-fast listener sending one DELETE: {floor * 1000:.1f} ms "
        f"({median(column['first_delete']) / floor:.1f}x)",
        why_missed=f"the bare listener alone took {floor * 1000:.1f} ms",
    )
    results.add(
        "overhead",
        "shutdown overhead beyond the pods' own termination",
        [1000 * v for v in column["overhead"]],
        "ms",
        target=("<=", 1000.0),
        baseline=f"the whole shutdown took {median(column['total']) / own:.3f}x the pods' own "
        f"termination ({own * 1000:.0f} ms)",
        why_missed=f"the pods' own termination took {own * 1000:.0f} ms",
    )
    results.add(
        "next_phase_late",
        "a phase's deadline -> next phase's first DELETE (stuck pods)",
        [1000 * v for v in late["next_phase_late"]],
        "ms",
    )
    results.add(
        "release_late",
        "budget end -> StartUnit (stuck pods: released by the deadline)",
        [1000 * v for v in late["release_late"]],
        "ms",
        baseline=f"logind alone, PowerOff -> StartUnit: {median(bare) * 1000:.2f} ms",
    )
    results.add(
        "node_only",
        "node-only: PrepareForShutdown(true) -> StartUnit",
        [1000 * v for v in node_only],
        "ms",
        baseline=f"logind alone: {median(bare) * 1000:.2f} ms",
    )
    results.write(args.json)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pods", type=int, default=30, help="pods per round (3 phases)")
    parser.add_argument("--grace", type=int, default=2, help="terminationGracePeriodSeconds")
    parser.add_argument("--time-scale", type=float, default=0.25, help="fake kubelet scale")
    add_output_argument(parser)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("the logind harness needs root", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
