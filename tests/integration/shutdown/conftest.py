"""The shutdown rig: the real controller against the real logind harness and the fake API server.

Nothing of ours is mocked: the controller is wired exactly as ``agent.daemon`` wires it
(``build_cluster`` over a kubeconfig for the fake API server, NodeState reflectors running,
the system bus from ``DBUS_SYSTEM_BUS_ADDRESS``). Only the host paths are redirected, so a
test can choose the boot ID the agent sees.

The pods are ``tests.harness.shutdownpods.pod``, the builder the unit tests use too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dbus_fast import Message, MessageType
from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config import AgentConfig, parse_document
from agent.config.shutdown import ShutdownOptions
from agent.daemon import build_cluster
from agent.logind.session import LogindOwnerChanged
from agent.node.paths import HostPaths
from agent.runtime.context import KubeContext
from agent.shutdown.controller import ShutdownController
from agent.shutdown.inhibitor import WHO
from agent.shutdown.metrics import ShutdownMetrics
from agent.shutdown.taint import SHUTTING_DOWN
from agent.telemetry.health import Health
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer, FakeKubelet
from tests.harness.fake_apiserver.requestlog import RecordedRequest, observe_every_server
from tests.harness.fake_apiserver.resources import ResourceType
from tests.harness.fake_apiserver.store import StoredEvent
from tests.harness.logind import LogindHarness
from tests.harness.logind.systemd1 import Systemd1Call
from tests.harness.shutdownpods import NODE
from tests.harness.waiting import wait_until

TAINT_KEY = SHUTTING_DOWN.key
_LOCK_DECISIONS = (
    "shutdown delay lock taken",
    "our shutdown delay lock survived the logind restart",
)
"""What the agent logs after it checked its lock on logind's (re)appearance."""
BOOT_ID = "5b1f3c9e-0000-4000-8000-000000000001"
DEFAULT_DROPIN_NAME = Path(ShutdownOptions().logind_drop_in_path).name
"""The agent's default drop-in name, in the harness's logind.conf.d."""


async def until(
    condition: Callable[[], Any], timeout: float, what: str = "condition", **options: Any
) -> Any:
    """``wait_until`` with the timeout first, as this suite's call sites read (``options``
    are its own: ``blocking=True`` for a condition that blocks, a harness call, a file read)."""
    return await wait_until(condition, what, timeout, **options)


def fake_proc(root: Path, boot_id: str = BOOT_ID) -> Path:
    """A ``/proc`` with just the boot ID file the agent reads."""
    random = root / "proc" / "sys" / "kernel" / "random"
    random.mkdir(parents=True, exist_ok=True)
    (random / "boot_id").write_text(boot_id + "\n")
    return root / "proc"


def ensure_priority_classes(server: FakeApiServer, pods: list[dict[str, Any]]) -> None:
    """Create the PriorityClasses ``pods`` name, of the priority each pod carries."""
    for each in pods:
        name = each["spec"].get("priorityClassName")
        if not name or server.exists("priorityclasses", name):
            continue
        server.create(kubeobjects.priority_class(name, each["spec"]["priority"]))


def config_text(
    *,
    state_dir: Path,
    proc: Path,
    dropin: Path,
    buckets: list[tuple[int, int]],
    kubeconfig: Path | None = None,
    mode: str = "delete",
    extra: str = "",
) -> str:
    lines = [
        f"nodeName: {NODE}",
        f"stateDir: {state_dir}",
        f"hostPaths: {{proc: {proc}}}",
        "shutdownGracePeriodByPodPriority:",
        *[f"  - {{priority: {p}, shutdownGracePeriodSeconds: {s}}}" for p, s in buckets],
        "shutdown:",
        f"  mode: {mode}",
        f"  logindDropInPath: {dropin}",
        "  dbusCallTimeout: 2s",
    ]
    if kubeconfig is not None:
        lines.append(f"kubeconfig: {kubeconfig}")
    return "\n".join(lines) + "\n" + extra


def _has_our_taint(node: dict[str, Any] | None) -> bool:
    taints = ((node or {}).get("spec") or {}).get("taints") or []
    return any(taint.get("key") == TAINT_KEY for taint in taints)


def is_pod_write(request: RecordedRequest) -> bool:
    """A request that acts on a pod: a delete, an eviction, or a status patch (the mark)."""
    return "/pods/" in request.path and request.method in ("DELETE", "POST", "PATCH")


class WriteOrder:
    """One ordered list of what reached the fake API server: the store's commits of our
    taint (added or removed) and the arrival of every request that acts on a pod.

    The commit hook runs under the store's lock as the write happens, and the request
    observer as each request arrives, before it is processed; both append to one list, so
    its order is the order of events, with no clock involved.
    """

    def __init__(self, server: FakeApiServer) -> None:
        self.events: list[tuple[str, str]] = []
        server.store.add_hook(self._on_commit)
        self._stop = observe_every_server(self._on_request)

    def _on_commit(self, rt: ResourceType, event: StoredEvent) -> None:
        if rt.plural != "nodes":
            return
        before = _has_our_taint(event.prev)
        after = event.type != "DELETED" and _has_our_taint(event.obj)
        if after and not before:
            self.events.append(("taint-stored", str(event.rv)))
        elif before and not after:
            self.events.append(("taint-removed", str(event.rv)))

    def _on_request(self, request: RecordedRequest) -> None:
        if is_pod_write(request):
            self.events.append((f"pod-{request.method}", request.path.rsplit("/", 1)[-1]))

    def close(self) -> None:
        self._stop()

    def first(self, kind: str) -> int | None:
        """The position of the first event of ``kind`` (``pod-`` matches any pod write)."""
        for index, (seen, _) in enumerate(self.events):
            if seen == kind or (kind == "pod-" and seen.startswith("pod-")):
                return index
        return None


@dataclass
class ShutdownRig:
    logind: LogindHarness
    tmp: Path
    server: FakeApiServer | None
    kubelet: FakeKubelet | None
    config: AgentConfig
    controller: ShutdownController
    registry: CollectorRegistry
    health: Health
    cluster: KubeContext | None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    # -- observation ----------------------------------------------------------------------

    def metric(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)

    def state(self) -> dict[str, Any]:
        return dict(json.loads(self.config.shutdown_state_file.read_text()))

    async def started_at(self) -> float:
        """When the agent received PrepareForShutdown(true), as it recorded it.

        Its deadlines count from this moment, on ``time.monotonic()``: the clock of the fake
        API server's request log and of the systemd1 stand-in's calls (same machine, and
        the rig runs the agent in this process). Compare their times with this one, never
        with the test's own observation of the signal, which may come earlier or later.
        """
        await until(self.config.shutdown_state_file.exists, 5, "the state file")
        return float(self.state()["startMonotonic"])

    def _our_locks(self) -> list[tuple[str, str, str, str, int, int]]:
        return [inhibitor for inhibitor in self.logind.list_inhibitors() if inhibitor[1] == WHO]

    async def our_locks(self) -> list[tuple[str, str, str, str, int, int]]:
        return await asyncio.to_thread(self._our_locks)

    async def wait_for_lock(self, timeout: float = 10) -> None:
        await until(lambda: len(self._our_locks()) == 1, timeout, "the agent's lock", blocking=True)

    async def bus_events_handled(self, logs: list[dict[str, Any]]) -> None:
        """Wait until the agent has handled every bus event it was sent so far.

        First a round trip on the agent's own bus connection (``GetNameOwner`` of logind):
        the bus delivers in order, so every signal routed to the agent before the answer is
        in its queue by then. Then a sentinel goes through the same queue, behind them:
        ``LogindOwnerChanged`` naming logind's present owner, which the agent handles like
        logind announcing itself (it checks its lock, keeps or takes one, and logs which).
        ``logs`` (``structlog.testing.capture_logs``) shows that handling: every event
        queued before the sentinel was handled by then, with all it caused on the loop.
        """
        session = self.controller.logind.session
        bus = session.bus
        assert bus is not None
        reply = await bus.call(
            Message(
                destination="org.freedesktop.DBus",
                path="/org/freedesktop/DBus",
                interface="org.freedesktop.DBus",
                member="GetNameOwner",
                signature="s",
                body=["org.freedesktop.login1"],
            )
        )
        assert reply is not None
        assert reply.message_type is MessageType.METHOD_RETURN, reply.body

        def lock_decisions() -> int:
            return sum(e["event"] in _LOCK_DECISIONS for e in logs)

        before = lock_decisions()
        session.events.put_nowait(LogindOwnerChanged(owner=str(reply.body[0])))
        await until(lambda: lock_decisions() > before, 5, "the sentinel to be handled")

    def taints(self) -> list[dict[str, Any]]:
        assert self.server is not None
        node = self.server.get("nodes", NODE)
        return list((node.get("spec") or {}).get("taints") or [])

    def has_taint(self) -> bool:
        return any(t.get("key") == TAINT_KEY for t in self.taints())

    def pod_deletions(self) -> list[Any]:
        assert self.server is not None
        return self.server.requests(
            "DELETE", predicate=lambda r: "/pods/" in r.path and r.status is not None
        )

    async def power_off(self) -> float:
        """PowerOff through logind; returns when PrepareForShutdown(true) was seen."""
        since = time.monotonic()
        await asyncio.to_thread(self.logind.power_off)
        return await self.logind.wait_for_prepare_for_shutdown_async(True, timeout=5, since=since)

    async def power_off_until_released(self, timeout: float = 20) -> tuple[float, Systemd1Call]:
        """PowerOff, then wait for logind's StartUnit (made once our lock is gone); returns
        the agent's recorded start (see ``started_at``) and that call."""
        await self.power_off()
        started = await self.started_at()
        start_unit = await self.logind.systemd1.wait_for_call_async("StartUnit", timeout=timeout)
        return started, start_unit

    async def final_state(self, timeout: float = 5) -> dict[str, Any]:
        """The state file once the agent has written its final record."""
        await until(lambda: self.state()["status"] == "finished", timeout, "the final record")
        return self.state()

    async def stop(self) -> None:
        for task in reversed(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.cluster is not None:
            self.cluster.kube.close()


@pytest.fixture
async def rig_factory(
    logind_harness: LogindHarness, tmp_path: Path
) -> AsyncIterator[Callable[..., Any]]:
    """Build and start rigs; everything is stopped at teardown."""
    rigs: list[ShutdownRig] = []
    servers: list[FakeApiServer] = []

    async def build(
        *,
        buckets: list[tuple[int, int]],
        cluster: bool = True,
        mode: str = "delete",
        pods: list[dict[str, Any]] | None = None,
        time_scale: float = 1.0,
        boot_id: str = BOOT_ID,
        dropin: Path | None = None,
        extra: str = "",
        server: FakeApiServer | None = None,
        start: bool = True,
        prepare: Callable[[ShutdownRig], None] | None = None,
    ) -> ShutdownRig:
        kubeconfig = None
        kubelet = None
        if cluster:
            if server is None:
                server = FakeApiServer().start()
                servers.append(server)
            kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
            kubelet = server.kubelet(NODE, time_scale=time_scale)
            pods = pods or []
            ensure_priority_classes(server, pods)
            for each in pods:
                server.create(each)
        text = config_text(
            state_dir=tmp_path / "state",
            proc=fake_proc(tmp_path / boot_id, boot_id),
            dropin=dropin or logind_harness.dropin_dir / DEFAULT_DROPIN_NAME,
            buckets=buckets,
            kubeconfig=kubeconfig,
            mode=mode,
            extra=extra,
        )
        config = parse_document(AgentConfig, text, "test config")
        kube = build_cluster(config, NODE) if cluster else None
        registry = CollectorRegistry()
        health = Health()
        controller = ShutdownController(
            config=config,
            node_name=NODE,
            paths=HostPaths(proc=Path(config.host_paths.proc)),
            metrics=ShutdownMetrics(registry),
            health=health,
            clock=SystemClock(),
            cluster=kube,
        )
        rig = ShutdownRig(
            logind=logind_harness,
            tmp=tmp_path,
            server=server if cluster else None,
            kubelet=kubelet,
            config=config,
            controller=controller,
            registry=registry,
            health=health,
            cluster=kube,
        )
        rigs.append(rig)
        if prepare is not None:
            prepare(rig)
        if kube is not None:
            rig.tasks += [asyncio.create_task(r.run()) for r in kube.node_state.reflectors]
            await asyncio.wait_for(kube.node_state.wait_synced(), 10)
        if start:
            rig.tasks.append(asyncio.create_task(controller.run(), name="shutdown-controller"))
        return rig

    try:
        yield build
    finally:
        for rig in rigs:
            await rig.stop()
        for server in servers:
            server.stop()
