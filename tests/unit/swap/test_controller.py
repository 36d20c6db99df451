"""The controller's own logic with doubles for its ports (the cgroup tree, the pod source,
the clock): failures, write errors, refusals, and what wakes it up."""

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from structlog.testing import capture_logs

from agent.config.swap import MemorySwapConfig
from agent.kube.reflector import Listener
from agent.node.cgroupfiles import CgroupPathError
from agent.node.cgroups import CgroupFacts, CgroupMode
from agent.node.containercgroups import CgroupReading, KubepodsScan
from agent.node.facts import NodeFacts
from agent.node.kernel import KernelFacts
from agent.node.kubepods import PodQOSDir
from agent.node.memory import read_memory
from agent.node.tmpfs import NoswapSupport
from agent.swap.collector import SwapAuditCollector
from agent.swap.controller import SwapController
from agent.swap.limits import KUBELET_CALC_ERROR
from agent.swap.wakeups import wakes_audit
from agent.telemetry.health import Health
from tests.harness.cgroups import GIB, container_id
from tests.harness.hosttree import HostTree
from tests.harness.waiting import wait_until


class FakeTree:
    """A kubepods tree double: canned scans, recorded (or refused) writes."""

    def __init__(self) -> None:
        self.fail_scan: OSError | None = None
        self.refuse_writes = False
        self.writes: list[tuple[str, int]] = []
        self.readings: tuple[CgroupReading, ...] = ()
        self.scans: list[frozenset[str] | None] = []
        """The pod UIDs each scan was limited to (``None``: the whole tree)."""

    def scan(self, pod_uids: frozenset[str] | None = None) -> KubepodsScan:
        if self.fail_scan is not None:
            raise self.fail_scan
        self.scans.append(pod_uids)
        readings = tuple(r for r in self.readings if pod_uids is None or r.pod_uid in pod_uids)
        return KubepodsScan(None, "kubepods.slice", readings)

    def write_swap_max(self, path: str, value: int) -> None:
        if self.refuse_writes:
            raise CgroupPathError("read-only in this test")
        self.writes.append((path, value))


class FakePods:
    """A pod source double: fixed pods and Node, and the listeners the controller added."""

    def __init__(self, pods: list[dict[str, Any]], node: dict[str, Any] | None = None) -> None:
        self.pods = pods
        self.node = node
        self.listeners: list[Listener] = []

    async def wait_synced(self) -> None:
        return None

    def pod_list(self) -> list[dict[str, Any]]:
        return self.pods

    def node_object(self) -> dict[str, Any] | None:
        return self.node

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, obj: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            listener("MODIFIED", obj)


class FakeClock:
    """Short sleeps return at once; the audit-interval sleep waits until cancelled."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> float:
        return 1000.0

    def monotonic(self) -> float:
        return 5.0

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if seconds >= 30:
            await asyncio.Future()


def controller(
    tmp_path: Path,
    tree: FakeTree,
    clock: FakeClock,
    mode: CgroupMode = CgroupMode.V2,
    pods: FakePods | None = None,
    **config: object,
) -> SwapController:
    host = HostTree(tmp_path).standard(total=16 * GIB, swap_total=4 * GIB)
    facts = NodeFacts(
        memory=read_memory(host.paths),
        cgroups=CgroupFacts(mode, True, "/"),
        kernel=KernelFacts("6.8.0", (6, 8, 0), 67584, None, False),
        tmpfs_noswap=NoswapSupport(True, "kernel >= 6.4"),
    )
    return SwapController(
        config=MemorySwapConfig(**config),  # type: ignore[arg-type]
        node_name="node-1",
        paths=host.paths,
        facts=facts,
        clock=clock,
        cluster=None,
        tree=tree,
        pods=pods,
        health=Health(),
        page_size=4096,
    )


async def test_unreadable_node_counts_a_failure_and_degrades_health(tmp_path: Path) -> None:
    """A scan error is logged and counted, never raised; the next good audit clears it."""
    tree = FakeTree()
    swap = controller(tmp_path, tree, FakeClock())
    tree.fail_scan = PermissionError(13, "Permission denied")
    assert await swap.run_once() is None
    assert swap.stats.audit_failures == 1
    assert swap.health is not None
    assert "swap-audit" in swap.health.degraded()
    tree.fail_scan = None
    assert await swap.run_once() is not None
    assert swap.stats.audits == 1
    assert "swap-audit" not in swap.health.degraded()


async def test_node_only_mode_reports_cgroups_as_unmapped_and_never_writes(tmp_path: Path) -> None:
    """Without a cluster there are no pods: cgroups are listed, enforcement has no target."""
    tree = FakeTree()
    tree.readings = (
        CgroupReading("k/p/c", PodQOSDir.BURSTABLE, "u", container_id(1), "crio", "max", 0),
    )
    swap = controller(tmp_path, tree, FakeClock(), enforce=True)
    report = await swap.run_once()
    assert report is not None
    assert len(report.unmapped) == 1
    assert tree.writes == []


UID = "00000000-0000-4000-8000-000000000001"
POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": UID},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi"}}}]},
    "status": {"containerStatuses": [{"name": "c", "containerID": f"cri-o://{container_id(1)}"}]},
}
DRIFTED = CgroupReading("k/p/c", PodQOSDir.BURSTABLE, UID, container_id(1), "crio", "max", 0)


async def test_refused_writes_are_counted_and_logged(tmp_path: Path) -> None:
    """A write the tree refuses is a failure in the counter and a warning, not a crash."""
    tree = FakeTree()
    tree.refuse_writes = True
    tree.readings = (DRIFTED,)
    swap = controller(
        tmp_path, tree, FakeClock(), pods=FakePods([POD]), enforce=True, swap_behavior="LimitedSwap"
    )
    with capture_logs() as logs:
        await swap.run_once()
    assert (swap.stats.writes, swap.stats.write_failures) == (0, 1)
    (failure,) = [e for e in logs if e["event"] == "swap limit enforcement failed"]
    assert (failure["value"], failure["error"]) == (268435456, "read-only in this test")


async def test_pod_events_wake_the_loop_after_the_debounce(tmp_path: Path) -> None:
    """With a long audit interval, a pod change starts the next audit after the debounce."""
    clock, pods = FakeClock(), FakePods([])
    swap = controller(tmp_path, FakeTree(), clock, pods=pods, audit_interval=60.0)
    running = asyncio.ensure_future(swap.run())
    try:
        await wait_until(lambda: swap.stats.audits == 1 and 60.0 in clock.slept, "first wait")
        pods.emit(POD)
        await wait_until(lambda: swap.stats.audits == 2, "the audit the pod event asked for")
        assert clock.slept[:2] == [60.0, swap.debounce]
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert pods.listeners == []  # unsubscribed on the way out


@pytest.mark.parametrize(
    ("obj", "wakes"),
    [
        pytest.param({"kind": "Pod", "metadata": {"name": "p"}}, True, id="pod-changed"),
        pytest.param(None, True, id="relist"),
        pytest.param({"kind": "Node", "metadata": {"name": "node-1"}}, False, id="node-changed"),
    ],
)
def test_only_pod_changes_call_for_an_audit(obj: dict[str, Any] | None, wakes: bool) -> None:
    """Our own label patches come back as Node events; they wait for the timer."""
    assert wakes_audit(obj) is wakes


async def test_no_enforcement_without_cgroup_v2(tmp_path: Path) -> None:
    """Where kubelet would not set swap limits (no cgroup v2), neither do we; the refusal
    and what a cgroup v1 node means for the audit are each said once."""
    tree = FakeTree()
    tree.readings = (DRIFTED,)
    swap = controller(
        tmp_path, tree, FakeClock(), CgroupMode.HYBRID, pods=FakePods([POD]), enforce=True
    )
    with capture_logs() as logs:
        report = await swap.run_once()
        await swap.run_once()
    assert report is not None
    assert len(report.drifted) == 1  # still audited and reported
    assert tree.writes == []
    assert sum("enforcement needs cgroup v2" in entry["event"] for entry in logs) == 1
    assert sum("LimitedSwap needs cgroup v2" in entry["event"] for entry in logs) == 1


async def test_kubelets_calculation_error_is_logged_once_while_it_lasts(tmp_path: Path) -> None:
    """A request above node memory logs kubelet's message once, not every cycle."""
    huge = {
        **POD,
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "64Gi"}}}]},
    }
    swap = controller(
        tmp_path, FakeTree(), FakeClock(), pods=FakePods([huge]), swap_behavior="LimitedSwap"
    )
    with capture_logs() as logs:
        await swap.run_once()
        await swap.run_once()
    (entry,) = [e for e in logs if e["event"] == KUBELET_CALC_ERROR]
    assert (
        entry["error"]
        == f"container request {64 * GIB} is larger than total node memory {16 * GIB}"
    )


def node_with_swap(capacity: int) -> dict[str, Any]:
    return {"kind": "Node", "status": {"nodeInfo": {"swap": {"capacity": capacity}}}}


async def test_no_enforcement_while_kubelets_swap_capacity_is_not_the_nodes(
    tmp_path: Path,
) -> None:
    """kubelet saw 2 GiB, the node has 4 GiB: nothing is written and it is said once; once
    kubelet reports 4 GiB the drifted container is corrected and the log says so."""
    tree = FakeTree()
    tree.readings = (DRIFTED,)
    pods = FakePods([POD], node_with_swap(2 * GIB))
    swap = controller(
        tmp_path, tree, FakeClock(), pods=pods, enforce=True, swap_behavior="LimitedSwap"
    )
    with capture_logs() as logs:
        report = await swap.run_once()
        await swap.run_once()
    assert report is not None
    (row,) = report.drifted
    assert row.expected.bytes == 134217728  # 1Gi / 16Gi * kubelet's 2Gi
    assert tree.writes == []
    refusals = [entry for entry in logs if entry["event"].endswith("; not enforcing")]
    assert len(refusals) == 1
    assert "differs from SwapTotal (4294967296 bytes)" in refusals[0]["event"]

    pods.node = node_with_swap(4 * GIB)
    with capture_logs() as logs:
        await swap.run_once()
    assert tree.writes == [(DRIFTED.path, 268435456)]
    assert "swap limit enforcement allowed again" in [entry["event"] for entry in logs]


async def test_status_noise_of_an_audited_pod_does_not_poke_the_loop(tmp_path: Path) -> None:
    """A Ready flip of a pod the last audit read does not ask for an audit; a restarted
    container (a new runtime ID) does."""
    swap = controller(tmp_path, FakeTree(), FakeClock(), pods=FakePods([POD]))
    await swap.run_once()
    flipped = {**POD, "status": {**POD["status"], "conditions": [{"type": "Ready"}]}}
    swap._on_change("MODIFIED", flipped)
    assert not swap._poke.is_set()
    restarted = {
        **POD,
        "status": {
            "containerStatuses": [{"name": "c", "containerID": f"cri-o://{container_id(2)}"}]
        },
    }
    swap._on_change("MODIFIED", restarted)
    assert swap._poke.is_set()


UID_B = "00000000-0000-4000-8000-000000000002"


def pod_b(seed: int) -> dict[str, Any]:
    cid = f"cri-o://{container_id(seed)}"
    return {
        "metadata": {"name": "b", "namespace": "ns", "uid": UID_B},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi"}}}]},
        "status": {"containerStatuses": [{"name": "c", "containerID": cid}]},
    }


def reading_b(seed: int) -> CgroupReading:
    return CgroupReading(
        f"k/b/c{seed}", PodQOSDir.BURSTABLE, UID_B, container_id(seed), "crio", "max", 0
    )


class SteppingClock(FakeClock):
    """A FakeClock whose monotonic time the test moves on."""

    def __init__(self) -> None:
        super().__init__()
        self.elapsed = 5.0

    def monotonic(self) -> float:
        return self.elapsed


def swap_series(registry: CollectorRegistry) -> list[str]:
    """The swap lines of a scrape, less the ones that change with every audit."""
    return [
        line
        for line in generate_latest(registry).decode().splitlines()
        if line.startswith(("container_swap", "kubelet_companion_")) and "audit" not in line
    ]


async def test_pod_events_audit_only_the_changed_pod_and_gone_pods_leave_metrics(
    tmp_path: Path,
) -> None:
    """After the first full audit, a restarted pod is scanned alone and a deleted pod's
    series leave /metrics; the scrape then equals the one a full audit gives."""
    tree, clock = FakeTree(), FakeClock()
    tree.readings = (DRIFTED, reading_b(2))
    pods = FakePods([POD, pod_b(2)])
    swap = controller(tmp_path, tree, clock, pods=pods, audit_interval=60.0)
    registry = CollectorRegistry()
    registry.register(SwapAuditCollector(lambda: swap.report, lambda: swap.stats))
    running = asyncio.ensure_future(swap.run())
    try:
        await wait_until(lambda: swap.stats.audits == 1, "the first audit")
        assert tree.scans == [None]
        pods.pods, tree.readings = [POD, pod_b(3)], (DRIFTED, reading_b(3))
        pods.emit(pod_b(3))
        await wait_until(lambda: swap.stats.audits == 2, "the audit of the restart")
        assert tree.scans[-1] == {UID_B}
        assert 'pod="b"' in "\n".join(swap_series(registry))
        pods.pods, tree.readings = [POD], (DRIFTED,)
        for listener in list(pods.listeners):
            listener("DELETED", pod_b(3))
        await wait_until(lambda: swap.stats.audits == 3, "the audit of the deletion")
        assert tree.scans[-1] == {UID_B}
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    incremental = swap_series(registry)
    assert 'pod="b"' not in "\n".join(incremental)
    await swap.run_once()  # a full audit
    assert tree.scans[-1] is None
    assert swap_series(registry) == incremental


async def test_pod_churn_cannot_put_off_the_full_audit(tmp_path: Path) -> None:
    """Once auditInterval has passed since the last full audit, the next audit a pod event
    wakes reads the whole tree, however often events came in between."""
    tree, clock = FakeTree(), SteppingClock()
    pods = FakePods([POD, pod_b(2)])
    swap = controller(tmp_path, tree, clock, pods=pods, audit_interval=60.0)
    running = asyncio.ensure_future(swap.run())
    try:
        await wait_until(lambda: swap.stats.audits == 1, "the first audit")
        clock.elapsed += 30
        pods.emit(pod_b(3))
        await wait_until(lambda: swap.stats.audits == 2, "an incremental audit")
        assert tree.scans[-1] == {UID_B}
        clock.elapsed += 31
        pods.emit(pod_b(4))
        await wait_until(lambda: swap.stats.audits == 3, "the full audit that is due")
        assert tree.scans[-1] is None
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_an_incremental_audit_enforces_only_the_changed_pods(tmp_path: Path) -> None:
    """With enforcement on, an event-woken audit writes the changed pod's cgroups only;
    the full audit writes every drifted container's."""
    tree = FakeTree()
    tree.readings = (DRIFTED, reading_b(2))
    pods = FakePods([POD, pod_b(2)])
    swap = controller(
        tmp_path, tree, FakeClock(), pods=pods, enforce=True, swap_behavior="LimitedSwap"
    )
    await swap.run_once()
    assert sorted(path for path, _ in tree.writes) == ["k/b/c2", DRIFTED.path]
    tree.writes.clear()
    pods.pods, tree.readings = [POD, pod_b(3)], (DRIFTED, reading_b(3))
    swap._on_change("MODIFIED", pod_b(3))
    await swap.run_once(full=False)
    assert tree.writes == [("k/b/c3", 268435456)]
    assert tree.scans[-2:] == [{UID_B}, {UID_B}]  # the audit, and the re-scan after writing
