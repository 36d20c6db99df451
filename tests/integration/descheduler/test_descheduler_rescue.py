"""CriticalAddonRescue end to end against the fake API server, over the official client.

A Pending critical add-on the scheduler calls Unschedulable; three full nodes whose pods
differ in priority. The descheduler taints the cheapest node first (request-log order), then
evicts its lowest-priority pods through the eviction API; when the test binds the add-on, the
one-shot run removes the taint and exits. A rescue taint left by an earlier run goes at start,
and a ``CriticalAddonsOnly`` taint that is not ours stays.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from agent.descheduler.live.app import run_descheduler
from agent.descheduler.live.options import RunOptions
from agent.descheduler.live.taintactions import RescueTracker
from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.ownedtaints import OwnedTaints
from agent.kube.taintownership import RESCUE_ANNOTATION, rescue_taint
from agent.kube.timestamps import rfc3339
from tests.harness.deschedulerstate import node, pod
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import condition, owner_ref, priority_class
from tests.harness.waiting import wait_until

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
    """Node b (one victim, the lowest priority) is tainted before its pod is evicted; once
    the add-on is bound the taint and our annotation go, and the run exits 0."""
    _full_cluster(fake_apiserver)
    run = asyncio.create_task(
        run_descheduler(
            load_policy(_policy(tmp_path)),
            RunOptions(metrics_bind_address="127.0.0.1:0", qps=0),
            kube_api,
            install_signal_handlers=False,
        )
    )
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
        fake_apiserver.bind("kube-system", "dns", "b")
        code = await asyncio.wait_for(run, timeout=20)
    finally:
        run.cancel()
    assert code == 0
    assert _taints(fake_apiserver, "b") == []
    assert RESCUE_ANNOTATION not in _annotations(fake_apiserver, "b")
    events = [
        e
        for namespace in ("kube-system", "default")
        for e in fake_apiserver.list("events", namespace)
        if e["reason"] == "CriticalAddonRescue"
    ]
    assert sorted(e["involvedObject"]["kind"] for e in events) == ["Node", "Pod"]
    assert all("default/b1" in e["message"] for e in events)


async def test_leftover_rescue_taint_is_removed_at_start(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A rescue taint an earlier run left (our annotation names it) goes at start; a
    ``CriticalAddonsOnly`` taint someone else put on another node stays."""
    ours = {"key": "CriticalAddonsOnly", "value": "kube-system_old", "effect": "NoSchedule"}
    theirs = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}
    other = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    left = node("left", taints=[other, ours])
    left["metadata"]["annotations"] = {RESCUE_ANNOTATION: "kube-system_old"}
    fake_apiserver.create(left)
    fake_apiserver.create(node("platform", taints=[theirs]))
    code = await run_descheduler(
        load_policy(_policy(tmp_path)),
        RunOptions(metrics_bind_address="127.0.0.1:0", qps=0),
        kube_api,
        install_signal_handlers=False,
    )
    assert code == 0
    assert _taints(fake_apiserver, "left") == [other]
    assert RESCUE_ANNOTATION not in _annotations(fake_apiserver, "left")
    assert _taints(fake_apiserver, "platform") == [theirs]


async def test_rescue_taint_goes_after_its_timeout(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """An add-on that never gets scheduled keeps the node tainted only until the timeout."""
    fake_apiserver.create(node("b"))
    now = [100.0]
    taints = OwnedTaints(async_kube)
    tracker = RescueTracker(taints, lambda: now[0])
    await taints.add("b", rescue_taint("kube-system/dns"))
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


async def test_no_eviction_when_the_taint_cannot_be_added(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A refused node patch cancels the rescue: without the taint, no pod is evicted."""
    _full_cluster(fake_apiserver)
    fake_apiserver.faults.add("PATCH", r"/api/v1/nodes/b$", status=403, times=None)
    code = await run_descheduler(
        load_policy(_policy(tmp_path)),
        RunOptions(metrics_bind_address="127.0.0.1:0", qps=0),
        kube_api,
        install_signal_handlers=False,
    )
    assert code == 0
    assert fake_apiserver.requests(method="PATCH", path_contains="/api/v1/nodes/b")
    assert fake_apiserver.requests(method="POST", path_contains="/eviction") == []
    assert _taints(fake_apiserver, "b") == []
