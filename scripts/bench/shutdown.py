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

Needs root (the logind harness). Run: .venv/bin/python scripts/bench/shutdown.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for tests.harness

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus
from prometheus_client import CollectorRegistry

from agent.config import AgentConfig, parse_document
from agent.daemon import build_cluster
from agent.kube.api import KubeApi
from agent.kube.connection import connect
from agent.kube.resources import PODS
from agent.node.paths import HostPaths
from agent.runtime.clock import SystemClock
from agent.shutdown.controller import ShutdownController
from agent.shutdown.metrics import ShutdownMetrics
from agent.telemetry.health import Health
from agent.telemetry.logs import configure_logging
from tests.harness.fake_apiserver import FakeApiServer, FakeKubelet
from tests.harness.logind import LogindHarness

NODE = "bench-node"
OTHER_NODE = "elsewhere"
BUCKETS = ((0, 10), (1000, 10), (100000, 10))
PRIORITY_CLASSES = {"bench-low": 0, "bench-mid": 1000, "bench-high": 100000}


def pod(name: str, node: str, priority_class: str, grace: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "priorityClassName": priority_class,
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "app", "image": "registry.example/app:1"}],
        },
        "status": {"phase": "Running"},
    }


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
            server.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
        kubelet = server.kubelet(NODE, time_scale=args.time_scale)
        server.kubelet(OTHER_NODE)
        kubeconfig = server.write_kubeconfig(root / "kubeconfig")
        buckets = "\n".join(
            f"  - {{priority: {p}, shutdownGracePeriodSeconds: {s}}}" for p, s in BUCKETS
        )
        config = parse_document(
            AgentConfig,
            f"nodeName: {NODE}\nstateDir: {root / 'state'}\nkubeconfig: {kubeconfig}\n"
            f"shutdownGracePeriodByPodPriority:\n{buckets}\n"
            f"shutdown:\n  logindDropInPath: {logind.dropin_dir / '99-kubelet-companion.conf'}\n",
            "bench",
        )
        cluster = build_cluster(config, NODE)
        connection = connect(str(kubeconfig))
        if cluster is None or connection is None:
            raise RuntimeError("the fake API server's kubeconfig did not load")
        controller = ShutdownController(
            config=config,
            node_name=NODE,
            paths=HostPaths(),
            metrics=ShutdownMetrics(CollectorRegistry()),
            health=Health(),
            clock=SystemClock(),
            cluster=cluster,
        )
        listener = BareListener(KubeApi(connection.api_client))
        await listener.start(logind.bus_address)
        tasks = [asyncio.create_task(r.run()) for r in cluster.node_state.reflectors]
        tasks.append(asyncio.create_task(controller.run()))
        try:
            await asyncio.wait_for(cluster.node_state.wait_synced(), 10)
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
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            listener.stop()
            cluster.kube.close()
    report(args, results, bare)
    return 0


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(value: float) -> str:
    return f"{value * 1000:8.1f} ms"


def report(args: argparse.Namespace, results: list[dict[str, float]], bare: list[float]) -> None:
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
    for label, values in rows:
        print(f"{label:44}{ms(median(values))}{ms(min(values))}{ms(max(values))}")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pods", type=int, default=30, help="pods per round (3 phases)")
    parser.add_argument("--grace", type=int, default=2, help="terminationGracePeriodSeconds")
    parser.add_argument("--time-scale", type=float, default=0.25, help="fake kubelet scale")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("the logind harness needs root", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
