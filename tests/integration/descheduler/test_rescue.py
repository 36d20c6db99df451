"""CriticalAddonRescue end to end against the fake API server, over the official client.

A Pending critical add-on the scheduler calls Unschedulable; three full nodes whose pods
differ in priority. The descheduler records the rescue on its Lease, taints the cheapest node
(request-log order), then evicts its lowest-priority pods through the eviction API; when the
test binds the add-on, the one-shot run removes the taint, forgets the rescue and exits. A
rescue an earlier run or leader left in flight is taken over, not started again; a mark on a
node that our record does not hold (an agent may write its own Node's annotations) neither
stops a rescue nor gets a ``CriticalAddonsOnly`` taint removed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from agent.descheduler.live.taintactions import RescueTracker
from agent.descheduler.model.taintrecord import RecordedTaint
from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kubesemantics.nodekeys import RESCUE_ANNOTATION
from agent.kubesemantics.taintownership import rescue_taint, rescue_taint_valued
from agent.kubesemantics.timestamps import rfc3339
from agent.telemetry.metrics import new_registry
from tests.harness.deschedulerstate import node, pod
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import condition, owner_ref, priority_class
from tests.harness.livedescheduler import FAST_LEASE, run_live
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import left_in_flight, recorded_taints, taint_record

RESCUE_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: rescue
    pluginConfig:
    - name: "CriticalAddonRescue"
      args:
        unschedulableSeconds: 60
    plugins:
      balance:
        enabled: ["CriticalAddonRescue"]
"""
TAINT_VALUE = "kube-system_dns"


def _pod(name: str, node: str, cpu: str, priority: int) -> dict[str, Any]:
    """A pod of its own ReplicaSet, of PriorityClass ``p<priority>`` (admission sets it)."""
    return pod(
        name,
        node,
        cpu=cpu,
        memory="128Mi",
        priority=None,
        owner=owner_ref("ReplicaSet", name),
        priority_class=f"p{priority}" if priority else None,
    )


def _addon() -> dict[str, Any]:
    return pod(
        "dns",
        None,
        namespace="kube-system",
        cpu="2",
        memory="128Mi",
        priority=None,
        priority_class="p100",
        phase="Pending",
        ready=None,
        conditions=[
            condition(
                "PodScheduled",
                False,
                reason="Unschedulable",
                lastTransitionTime=rfc3339(time.time() - 300),
            )
        ],
        start_time=None,
        annotations={"scheduler.alpha.kubernetes.io/critical-pod": ""},
        tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    )


def _full_cluster(server: FakeApiServer, *, addon: bool = True) -> None:
    """a: one 3-CPU pod of priority 10; b: one of priority 1; c: three 1.3-CPU pods of 0, two
    of which would have to go. The add-on (priority 100) asks for 2 of each node's 4 CPUs."""
    for name in ("a", "b", "c"):
        server.create(node(name))
    for value in (1, 10, 100):
        server.create(priority_class(f"p{value}", value))
    server.create(_pod("a1", "a", "3", 10))
    server.create(_pod("b1", "b", "3", 1))
    for index in range(3):
        server.create(_pod(f"c{index}", "c", "1300m", 0))
    if addon:
        server.create(_addon())


def _taints(server: FakeApiServer, node: str) -> list[dict[str, Any]]:
    return list(server.get("nodes", node)["spec"].get("taints") or [])


def _annotations(server: FakeApiServer, node: str) -> dict[str, str]:
    return dict(server.get("nodes", node)["metadata"].get("annotations") or {})


def _policy(tmp_path: Path, text: str = RESCUE_POLICY) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


async def test_rescue_taints_the_cheapest_node_first_then_evicts_and_untaints(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The rescue is recorded on the Lease before node b (one victim, the lowest priority) is
    tainted, and b is tainted before its pod is evicted; once the add-on is bound the taint,
    our annotation and the record's entry go, and the run exits 0."""
    _full_cluster(fake_apiserver)
    run = asyncio.create_task(run_live(_policy(tmp_path), kube_api))
    try:
        await wait_until(
            lambda: fake_apiserver.requests(method="POST", path_contains="/eviction"), timeout=20
        )
        patches = fake_apiserver.requests(method="PATCH", path_contains="/api/v1/nodes/")
        evictions = fake_apiserver.requests(method="POST", path_contains="/eviction")
        assert [r.path for r in patches] == ["/api/v1/nodes/b"]
        assert [r.path.split("/")[-2] for r in evictions] == ["b1"]
        assert patches[0].monotonic < evictions[0].monotonic
        assert {"key": "CriticalAddonsOnly", "value": TAINT_VALUE, "effect": "NoSchedule"} in (
            _taints(fake_apiserver, "b")
        )
        assert _annotations(fake_apiserver, "b")[RESCUE_ANNOTATION] == TAINT_VALUE
        entry = taint_record(fake_apiserver).get(RESCUE_ANNOTATION, "b")
        assert entry is not None
        assert (entry.value, entry.pod) == (TAINT_VALUE, "kube-system/dns")
        (recorded,) = fake_apiserver.requests(method="PUT", path_contains="/leases/")
        assert recorded.monotonic < patches[0].monotonic
        fake_apiserver.bind("kube-system", "dns", "b")
        code = await asyncio.wait_for(run, timeout=20)
    finally:
        run.cancel()
    assert code == 0
    assert _taints(fake_apiserver, "b") == []
    assert RESCUE_ANNOTATION not in _annotations(fake_apiserver, "b")
    assert len(taint_record(fake_apiserver)) == 0
    events = [
        e
        for namespace in ("kube-system", "default")
        for e in fake_apiserver.list("events", namespace)
        if e["reason"] == "CriticalAddonRescue"
    ]
    assert sorted(e["involvedObject"]["kind"] for e in events) == ["Node", "Pod"]
    assert all("default/b1" in e["message"] for e in events)


async def test_a_rescue_an_earlier_run_left_in_flight_is_taken_over(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, async_kube: AsyncKube, tmp_path: Path
) -> None:
    """A run that ended mid-rescue left node c tainted for the add-on, and the rescue in our
    record. The next run does not start a second rescue (no eviction, no other taint): it
    keeps the taint while the add-on waits, and removes it and the entry once it is bound."""
    _full_cluster(fake_apiserver)
    until = time.time() + 600
    entry = RecordedTaint(TAINT_VALUE, until, "kube-system/dns")
    await left_in_flight(async_kube, "c", rescue_taint("kube-system/dns"), entry)
    registry = new_registry("descheduler")
    run = asyncio.create_task(run_live(_policy(tmp_path), kube_api, registry=registry))
    try:
        await wait_until(
            lambda: registry.get_sample_value(
                "kubelet_companion_descheduler_cycles_total", {"outcome": "planned"}
            ),
            "the first cycle",
            20,
        )
        assert fake_apiserver.requests(method="POST", path_contains="/eviction") == []
        assert [t["node"] for t in _rescue_taints(fake_apiserver)] == ["c"]
        assert not run.done()  # it waits for the add-on it took over
        fake_apiserver.bind("kube-system", "dns", "c")
        code = await asyncio.wait_for(run, timeout=20)
    finally:
        run.cancel()
    assert code == 0
    assert _rescue_taints(fake_apiserver) == []
    assert RESCUE_ANNOTATION not in _annotations(fake_apiserver, "c")
    assert len(taint_record(fake_apiserver)) == 0


async def test_a_leftover_rescue_goes_at_start_and_an_unrecorded_mark_never_does(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, async_kube: AsyncKube, tmp_path: Path
) -> None:
    """A rescue our record holds whose add-on is gone is taken off at the first cycle, and
    only our taint beside someone else's. A platform's ``CriticalAddonsOnly`` taint whose
    node carries our mark naming it (an agent may write its own Node's annotations) is not
    in our record: taint and mark both stay."""
    ours = {"key": "CriticalAddonsOnly", "value": "kube-system_old", "effect": "NoSchedule"}
    theirs = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}
    other = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    fake_apiserver.create(node("left", taints=[other]))
    entry = RecordedTaint("kube-system_old", time.time() + 600, "kube-system/old")
    await left_in_flight(async_kube, "left", rescue_taint_valued("kube-system_old"), entry)
    forged = node("platform", taints=[theirs])
    forged["metadata"]["annotations"] = {RESCUE_ANNOTATION: "true"}
    fake_apiserver.create(forged)
    code = await run_live(_policy(tmp_path), kube_api)
    assert code == 0
    assert ours not in _taints(fake_apiserver, "left")
    assert _taints(fake_apiserver, "left") == [other]
    assert RESCUE_ANNOTATION not in _annotations(fake_apiserver, "left")
    assert _taints(fake_apiserver, "platform") == [theirs]
    assert _annotations(fake_apiserver, "platform") == {RESCUE_ANNOTATION: "true"}
    assert len(taint_record(fake_apiserver)) == 0


async def test_a_mark_an_agent_forged_on_its_own_node_does_not_stop_the_rescue(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A running descheduler; node a's agent writes our rescue mark for the add-on on its own
    Node. The add-on, Unschedulable, is rescued all the same (b tainted, b1 evicted), and the
    mark is counted as ignored."""
    _full_cluster(fake_apiserver, addon=False)
    registry = new_registry("descheduler")
    stop = asyncio.Event()
    run = asyncio.create_task(
        run_live(
            _policy(tmp_path),
            kube_api,
            descheduling_interval=0.3,
            registry=registry,
            stop=stop,
        )
    )
    try:
        await wait_until(
            lambda: registry.get_sample_value(
                "kubelet_companion_descheduler_cycles_total", {"outcome": "planned"}
            ),
            "the first cycle",
            20,
        )
        # What the agent on node a may do: patch its own Node's annotations.
        fake_apiserver.patch(
            "nodes",
            "a",
            {"metadata": {"annotations": {RESCUE_ANNOTATION: TAINT_VALUE}}},
            patch_type="merge",
        )
        fake_apiserver.create(_addon())
        await wait_until(
            lambda: fake_apiserver.requests(method="POST", path_contains="/eviction"),
            "the rescue's eviction",
            20,
        )
        evictions = fake_apiserver.requests(method="POST", path_contains="/eviction")
        assert [r.path.split("/")[-2] for r in evictions] == ["b1"]
        assert [t["node"] for t in _rescue_taints(fake_apiserver)] == ["b"]
        assert _annotations(fake_apiserver, "a") == {RESCUE_ANNOTATION: TAINT_VALUE}
        ignored = "kubelet_companion_descheduler_unrecorded_taint_marks"
        assert registry.get_sample_value(ignored, {"annotation": RESCUE_ANNOTATION}) == 1
    finally:
        stop.set()
        assert await asyncio.wait_for(run, 20) == 0


async def test_a_rescue_in_flight_survives_a_leader_change(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """Of two replicas, the leader rescues the add-on (b tainted, b1 evicted) and is stopped
    while the add-on still waits. The new leader knows the rescue is in flight from the
    record on the Lease: after its own cycles the taint is still on b and nothing more is
    evicted; once the add-on is bound it takes the taint off and forgets the rescue."""
    _full_cluster(fake_apiserver)
    policy = load_policy(_policy(tmp_path))
    registries = {name: new_registry("descheduler") for name in ("replica-a", "replica-b")}
    stops = {name: asyncio.Event() for name in registries}
    runs = {
        name: asyncio.create_task(
            run_live(
                policy,
                kube_api,
                identity=name,
                registry=registries[name],
                stop=stops[name],
                descheduling_interval=0.3,
                leader_elect=True,
                **FAST_LEASE,
            )
        )
        for name in registries
    }

    def planned(name: str) -> float:
        value = registries[name].get_sample_value(
            "kubelet_companion_descheduler_cycles_total", {"outcome": "planned"}
        )
        return value or 0.0

    try:
        await wait_until(
            lambda: fake_apiserver.requests(method="POST", path_contains="/eviction"),
            "the rescue's eviction",
            20,
        )
        leader = _holder(fake_apiserver)
        (follower,) = set(registries) - {leader}
        stops[leader].set()
        assert await asyncio.wait_for(runs[leader], 20) == 0
        await wait_until(lambda: _holder(fake_apiserver) == follower, "a new leader", 20)
        cycles = planned(follower)
        await wait_until(lambda: planned(follower) >= cycles + 2, "the new leader's cycles", 20)
        assert [t["node"] for t in _rescue_taints(fake_apiserver)] == ["b"]
        assert len(fake_apiserver.requests(method="POST", path_contains="/eviction")) == 1
        assert taint_record(fake_apiserver).get(RESCUE_ANNOTATION, "b") is not None
        fake_apiserver.bind("kube-system", "dns", "b")
        await wait_until(lambda: not _rescue_taints(fake_apiserver), "the taint removed", 20)
        await wait_until(lambda: not len(taint_record(fake_apiserver)), "the entry gone", 20)
    finally:
        for stop in stops.values():
            stop.set()
        await asyncio.gather(*runs.values(), return_exceptions=True)


def _holder(server: FakeApiServer) -> str:
    lease = server.try_get("leases", "descheduler", "kube-system") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def _rescue_taints(server: FakeApiServer) -> list[dict[str, Any]]:
    """Every ``CriticalAddonsOnly`` taint in the cluster, with its node."""
    return [
        {"node": item["metadata"]["name"], **taint}
        for item in server.list("nodes")
        for taint in item["spec"].get("taints") or []
        if taint["key"] == "CriticalAddonsOnly"
    ]


async def test_rescue_taint_goes_after_its_timeout(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """An add-on that never gets scheduled keeps the node tainted only until the timeout;
    then the taint and the record's entry go."""
    fake_apiserver.create(node("b"))
    now = [100.0]
    taints = recorded_taints(async_kube)
    tracker = RescueTracker(taints, lambda: now[0])
    await left_in_flight(async_kube, "b", rescue_taint("kube-system/dns"))
    tracker.track("b", "kube-system/dns", timeout=600)
    waiting = _addon()

    def lookup(_key: str) -> Any:
        from agent.descheduler.cache.projection import project_pod  # noqa: PLC0415

        return project_pod(waiting)

    assert await tracker.settle(lookup) == []
    assert _taints(fake_apiserver, "b") != []
    now[0] += 600
    assert await tracker.settle(lookup) == ["b"]
    assert _taints(fake_apiserver, "b") == []
    assert not tracker.pending
    assert len(taint_record(fake_apiserver)) == 0


async def test_no_eviction_when_the_taint_cannot_be_added(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A refused node patch cancels the rescue: without the taint, no pod is evicted, and
    the rescue recorded before the patch is forgotten again."""
    _full_cluster(fake_apiserver)
    fake_apiserver.faults.add("PATCH", r"/api/v1/nodes/b$", status=403, times=None)
    code = await run_live(_policy(tmp_path), kube_api)
    assert code == 0
    assert fake_apiserver.requests(method="PATCH", path_contains="/api/v1/nodes/b")
    assert fake_apiserver.requests(method="POST", path_contains="/eviction") == []
    assert _taints(fake_apiserver, "b") == []
    assert len(taint_record(fake_apiserver)) == 0
