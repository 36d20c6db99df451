"""The swap controller end to end: pods from NodeState (fake API server over HTTP), the node's
cgroups from a fixture tree, the Node's label/annotation/taint and Events through the API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from agent.clock import SystemClock
from agent.config import AgentConfig, parse_document
from agent.daemon import build_cluster
from agent.runtime.context import AgentContext
from agent.runtime.supervisor import Supervisor
from agent.runtime.watches import watch_task
from agent.swap.controller import root_tasks
from agent.swap.labels import SWAP_CAPACITY_ANNOTATION, SWAP_LABEL
from agent.swap.summary import NOSWAP_EVENT_MESSAGE, NOSWAP_EVENT_REASON
from agent.telemetry.health import Health
from tests.harness.cgroups import GIB, ContainerFixture, changed_files, container_id, pod_object
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.waiting import wait_until
from tests.integration.swap.conftest import (
    NODE,
    MakeSwapNode,
    MakeSwapNodeV1,
    StartSwapAgent,
    node_object,
)
from tests.integration.swap.swap_scenario import build_scenario

JSON = dict[str, Any]
LIMITED = {"swapBehavior": "LimitedSwap"}


def created(server: FakeApiServer) -> Any:
    """``create`` as the API server does it: the stored pod comes back with its own UID."""
    return server.create


def events(server: FakeApiServer, reason: str) -> list[JSON]:
    return [event for event in server.list("events") if event.get("reason") == reason]


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
async def test_enforce_writes_only_drifted_files_of_pods_from_nodestate(
    fake_apiserver: FakeApiServer,
    make_swap_node: MakeSwapNode,
    start_swap_agent: StartSwapAgent,
    driver: str,
) -> None:
    """Through the controller: drifted files get kubelet's values, nothing else in the tree
    changes (crafted UIDs/IDs and symlinks included), and metrics show the corrected state."""
    node = make_swap_node(driver)
    agent = await start_swap_agent(node, {**LIMITED, "enforce": True, "podDriftEvents": True})
    scenario = build_scenario(node.cgroups, created(fake_apiserver), lambda seed: f"ignored-{seed}")
    await agent.synced_with(lambda pods: len(pods) == len(scenario.pods))
    before = node.cgroups.snapshot()

    with capture_logs() as logs:
        report = await agent.controller.run_once()

    assert changed_files(before, node.cgroups.snapshot()) == {
        path: (before[path], ("file", value)) for path, value in scenario.drifted.items()
    }
    assert report is not None
    assert report.drifted == ()  # re-scanned after enforcement
    enforced = sorted(
        (entry["pod"], entry["container"], entry["value"])
        for entry in logs
        if entry["event"] == "swap limit enforced"
    )
    assert enforced == [("batch", "job", 0), ("web", "app", 268435456)]
    labels = {"container": "app", "pod": "web", "namespace": "default"}
    assert agent.metric("container_swap_limit_bytes", **labels) == 268435456
    assert agent.metric("kubelet_companion_container_swap_limit_expected_bytes", **labels) == (
        268435456
    )
    assert agent.metric("kubelet_companion_swap_limit_drift_containers") == 0
    assert agent.metric("kubelet_companion_swap_limit_writes_total", result="success") == 2
    drift_events = events(fake_apiserver, "SwapLimitDrift")
    assert sorted(e["involvedObject"]["name"] for e in drift_events) == ["batch", "web"]
    assert all("set to expected" in e["message"] for e in drift_events)


async def test_audit_only_reports_drift_and_writes_nothing(
    make_swap_node: MakeSwapNode, start_swap_agent: StartSwapAgent, fake_apiserver: FakeApiServer
) -> None:
    """Enforcement is off by default: drift shows in the metric and the log, files stay."""
    node = make_swap_node("systemd")
    agent = await start_swap_agent(node, LIMITED)
    scenario = build_scenario(node.cgroups, created(fake_apiserver), str)
    await agent.synced_with(lambda pods: len(pods) == len(scenario.pods))
    before = node.cgroups.snapshot()
    with capture_logs() as logs:
        await agent.controller.run_once()
        await agent.controller.run_once()
    assert changed_files(before, node.cgroups.snapshot()) == {}
    assert agent.metric("kubelet_companion_swap_limit_drift_containers") == 2
    drift_logs = [entry for entry in logs if entry["event"] == "swap limit drift"]
    assert sorted((e["container"], e["actual"], e["expected"]) for e in drift_logs) == [
        ("app", "max", 268435456),
        ("job", 4096, 0),
    ]  # once per drift, not once per cycle
    labels = {"container": "app", "pod": "web", "namespace": "default"}
    assert agent.metric("container_swap_limit_bytes", **labels) == float("inf")
    assert (
        agent.metric(
            "container_swap_usage_bytes", container="sidecar", pod="web", namespace="default"
        )
        == 8192
    )
    assert events(fake_apiserver, "SwapLimitDrift") == []  # pod events are opt-in


async def test_node_gets_label_annotation_taint_and_one_noswap_event(
    make_swap_node: MakeSwapNode, start_swap_agent: StartSwapAgent, fake_apiserver: FakeApiServer
) -> None:
    """Swap on without tmpfs noswap: label, capacity, opt-in taint, kubelet's Warning once;
    the Node's other labels, annotations and taints are untouched."""
    node = make_swap_node("systemd", in_user_namespace=True)
    agent = await start_swap_agent(node, {"taintSwapNodes": True})
    await agent.controller.run_once()
    await agent.until(
        lambda: (
            (agent.cluster.node_state.node_object() or {})
            .get("metadata", {})
            .get("labels", {})
            .get(SWAP_LABEL)
            == "true"
        ),
        "the label reached NodeState",
    )
    # Later cycles read the Node from NodeState, so they run once the patch is seen there.
    for _ in range(2):
        await agent.controller.run_once()
    current = fake_apiserver.get("nodes", NODE)
    assert current["metadata"]["labels"] == {"kubernetes.io/hostname": NODE, SWAP_LABEL: "true"}
    assert current["metadata"]["annotations"] == {
        "node.alpha.kubernetes.io/ttl": "0",
        SWAP_CAPACITY_ANNOTATION: str(4 * GIB),
    }
    assert current["spec"]["taints"] == [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
        {"key": "kubelet-companion.io/swap", "effect": "NoSchedule"},
    ]
    (event,) = events(fake_apiserver, NOSWAP_EVENT_REASON)
    assert (event["type"], event["message"]) == ("Warning", NOSWAP_EVENT_MESSAGE)
    assert (event["involvedObject"]["kind"], event["involvedObject"]["name"]) == ("Node", NODE)
    patches = fake_apiserver.requests("PATCH", f"/api/v1/nodes/{NODE}")
    assert len(patches) == 1  # later cycles found nothing to change and sent nothing

    node.swap(0)
    await agent.controller.run_once()
    current = fake_apiserver.get("nodes", NODE)
    assert current["metadata"]["labels"][SWAP_LABEL] == "false"
    assert current["metadata"]["annotations"][SWAP_CAPACITY_ANNOTATION] == "0"
    assert current["spec"]["taints"] == [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    ]


async def test_pod_changes_trigger_an_audit_and_gone_containers_lose_their_series(
    make_swap_node: MakeSwapNode, start_swap_agent: StartSwapAgent, fake_apiserver: FakeApiServer
) -> None:
    """With a long audit interval, a pod starting or going is audited within the debounce."""
    node = make_swap_node("systemd")
    agent = await start_swap_agent(node, {**LIMITED, "auditInterval": "10m"}, loop=True)
    await agent.until(lambda: agent.controller.report is not None, "the first audit")
    app = ContainerFixture("app", None, {"memory": "1Gi"}, {"memory": "2Gi"})
    pod = fake_apiserver.create(pod_object("late", "x", app, phase="Pending"))
    uid = pod["metadata"]["uid"]
    node.cgroups.add_container(uid, "burstable", container_id(1), swap_max="268435456")

    def started(current: JSON) -> JSON:
        current["status"]["phase"] = "Running"
        current["status"]["containerStatuses"][0]["containerID"] = f"containerd://{container_id(1)}"
        return current

    fake_apiserver.mutate("pods", "late", started, "default", subresource="status")
    labels = {"container": "app", "pod": "late", "namespace": "default"}
    await agent.until(
        lambda: agent.metric("container_swap_limit_bytes", **labels) == 268435456,
        "the started container's series",
    )
    fake_apiserver.delete("pods", "late", "default", grace_period_seconds=0)
    await agent.until(
        lambda: (
            agent.metric("kubelet_companion_container_swap_limit_expected_bytes", **labels) is None
        ),
        "the deleted pod's series to disappear",
    )


async def test_system_slice_opt_ins_and_eviction_check(
    make_swap_node: MakeSwapNode, start_swap_agent: StartSwapAgent, tmp_path: Path
) -> None:
    """memory.swap.max=0 and io.latency land on system.slice only; the eviction check warns
    while kubelet's 100Mi threshold is above vm.min_free_kbytes, and clears once it is not."""
    node = make_swap_node("systemd", min_free_kbytes=67584)
    kubelet_config = tmp_path / "kubelet-config.yaml"
    kubelet_config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "evictionHard:\n  memory.available: 100Mi\n"
    )
    agent = await start_swap_agent(
        node,
        {
            "systemSliceNoSwap": True,
            "systemSliceIoLatency": "50ms",
            "systemSliceIoLatencyDevices": ["8:0"],
            "checkEvictionThreshold": True,
            "kubeletConfigPath": str(kubelet_config),
        },
    )
    before = node.cgroups.snapshot()
    with capture_logs() as logs:
        await agent.controller.run_once()
        await agent.controller.run_once()
    assert changed_files(before, node.cgroups.snapshot()) == {
        "system.slice/memory.swap.max": (("file", "max\n"), ("file", "0")),
        "system.slice/io.latency": (("file", ""), ("file", "8:0 target=50000")),
    }
    assert agent.metric("kubelet_companion_swap_eviction_threshold_above_min_free") == 1
    warnings = [entry for entry in logs if "vm.min_free_kbytes" in entry["event"]]
    assert len(warnings) == 1  # said once, not every cycle
    assert [entry["file"] for entry in logs if entry["event"] == "system.slice updated"] == [
        "memory.swap.max",
        "io.latency",
    ]  # and only on the first cycle: the second found nothing to change

    node.host.kernel(min_free_kbytes=500000)
    await agent.controller.run_once()
    assert agent.metric("kubelet_companion_swap_eviction_threshold_above_min_free") == 0


async def test_root_tasks_wire_the_controller_and_its_collector(
    fake_apiserver: FakeApiServer, make_swap_node: MakeSwapNode, tmp_path: Path
) -> None:
    """As the agent wires it: root_tasks registers the collector and audits once synced."""
    node = make_swap_node("cgroupfs")
    fake_apiserver.create(node_object())
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    config = parse_document(
        AgentConfig, f'{{"nodeName": "{NODE}", "kubeconfig": "{kubeconfig}"}}', "t"
    )
    cluster = await asyncio.to_thread(build_cluster, config, NODE)
    assert cluster is not None
    registry, health = CollectorRegistry(), Health()
    ctx = AgentContext(
        config, NODE, node.paths, registry, health, SystemClock(), node.facts(), cluster
    )
    supervisor = Supervisor(health, stop_timeout=5)
    for reflector in cluster.node_state.reflectors:
        supervisor.add(watch_task(reflector, health))
    for task in root_tasks(ctx):
        supervisor.add(task)
    stop = asyncio.Event()
    running = asyncio.create_task(supervisor.run(stop))
    try:
        await wait_until(
            lambda: bool(
                registry.get_sample_value(
                    "kubelet_companion_swap_audits_total", {"result": "success"}
                )
            ),
            "the first audit",
        )
        assert registry.get_sample_value("kubelet_companion_swap_limit_drift_containers") == 0
    finally:
        stop.set()
        await asyncio.wait_for(running, timeout=15)
        cluster.kube.close()


async def test_enforce_writes_nothing_while_kubelets_swap_capacity_is_stale(
    make_swap_node: MakeSwapNode, start_swap_agent: StartSwapAgent, fake_apiserver: FakeApiServer
) -> None:
    """kubelet reports 2 GiB of swap, the node has 4 GiB (resized after kubelet started):
    expected limits are kubelet's, no cgroup file is written, and the report and metrics say
    why; once kubelet reports 4 GiB, enforcement goes ahead."""
    fake_apiserver.create(node_object(swap_capacity=2 * GIB))
    node = make_swap_node("systemd", swap=4 * GIB)
    agent = await start_swap_agent(node, {**LIMITED, "enforce": True})
    scenario = build_scenario(node.cgroups, created(fake_apiserver), str)
    await agent.synced_with(lambda pods: len(pods) == len(scenario.pods))
    before = node.cgroups.snapshot()

    with capture_logs() as logs:
        report = await agent.controller.run_once()

    assert changed_files(before, node.cgroups.snapshot()) == {}
    assert report is not None
    expected = {(row.pod, row.container): row.expected.bytes for row in report.drifted}
    # Request / 16 GiB * kubelet's 2 GiB: the sidecar, in sync for 4 GiB, is off for 2 GiB.
    assert expected == {
        ("web", "app"): 134217728,
        ("web", "sidecar"): 67108864,
        ("batch", "job"): 0,
    }
    assert report.summary.capacity_mismatch
    assert agent.metric("kubelet_companion_swap_capacity_mismatch") == 1
    assert agent.metric("kubelet_companion_swap_capacity_source_info", source="kubelet") == 1
    assert agent.metric("kubelet_companion_swap_limit_writes_total", result="success") == 0
    assert [entry["event"] for entry in logs if "not enforcing" in entry["event"]] == [
        f"kubelet's swap capacity ({2 * GIB} bytes) differs from SwapTotal ({4 * GIB} bytes) "
        "until kubelet restarts; not enforcing"
    ]
    # The Node's annotation still tells the node's own swap, not kubelet's stale view.
    annotations = fake_apiserver.get("nodes", NODE)["metadata"]["annotations"]
    assert annotations[SWAP_CAPACITY_ANNOTATION] == str(4 * GIB)

    def kubelet_restarted(current: JSON) -> JSON:
        current["status"]["nodeInfo"]["swap"]["capacity"] = 4 * GIB
        return current

    fake_apiserver.mutate("nodes", NODE, kubelet_restarted, subresource="status")
    await agent.until(
        lambda: (
            (agent.cluster.node_state.node_object() or {})
            .get("status", {})
            .get("nodeInfo", {})
            .get("swap", {})
            .get("capacity")
            == 4 * GIB
        ),
        "kubelet's new capacity reached NodeState",
    )
    await agent.controller.run_once()
    assert changed_files(before, node.cgroups.snapshot()) == {
        path: (before[path], ("file", value)) for path, value in scenario.drifted.items()
    }
    assert agent.metric("kubelet_companion_swap_capacity_mismatch") == 0


async def test_resized_pod_is_audited_by_its_allocated_resources(
    make_swap_node: MakeSwapNode, start_swap_agent: StartSwapAgent, fake_apiserver: FakeApiServer
) -> None:
    """A pod whose spec was resized to 2Gi while kubelet still holds its 1Gi allocation (in
    the pod status) is in sync at kubelet's 268435456 and is not rewritten by enforcement."""
    node = make_swap_node("systemd")
    agent = await start_swap_agent(node, {**LIMITED, "enforce": True})
    # The pod as the API shows it after `kubectl patch --subresource resize` to 2Gi/4Gi that
    # kubelet has not applied (infeasible for a swapping container since 1.33): the spec is
    # new, the status keeps the allocation. (The fake API server has no resize subresource,
    # so the pod is created in that state.)
    app = ContainerFixture("app", container_id(1), {"memory": "2Gi"}, {"memory": "4Gi"})
    resized = pod_object("resized", "x", app)
    (status,) = resized["status"]["containerStatuses"]
    status["allocatedResources"] = {"memory": "1Gi"}
    status["resources"] = {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    pod = fake_apiserver.create(resized)
    node.cgroups.add_container(
        pod["metadata"]["uid"], "burstable", container_id(1), swap_max="268435456"
    )
    await agent.synced_with(lambda pods: len(pods) == 1)
    before = node.cgroups.snapshot()
    report = await agent.controller.run_once()
    assert report is not None
    (row,) = report.containers
    assert (row.memory_request, row.expected.bytes, row.state.value) == (GIB, 268435456, "ok")
    assert changed_files(before, node.cgroups.snapshot()) == {}
    assert agent.metric("kubelet_companion_swap_limit_drift_containers") == 0


async def test_on_cgroup_v1_the_controller_lists_every_container_and_writes_nothing(
    fake_apiserver: FakeApiServer,
    make_swap_node_v1: MakeSwapNodeV1,
    start_swap_agent: StartSwapAgent,
) -> None:
    """A hybrid v1 node (cgroupfs driver) with enforcement asked for: the agent's controller
    finds every container through the one finder, exports their swap in use, compares and
    writes nothing, publishes no expected limit and says once why (LimitedSwap needs v2)."""
    node = make_swap_node_v1("cgroupfs")
    agent = await start_swap_agent(node, {**LIMITED, "enforce": True})
    web = fake_apiserver.create(
        pod_object("web", None, ContainerFixture("app", container_id(1), {"memory": "1Gi"}))
    )
    db = fake_apiserver.create(
        pod_object(
            "db",
            None,
            ContainerFixture("pg", container_id(2), {"memory": "1Gi"}, {"memory": "1Gi"}),
        )
    )
    node.cgroups.add_container(
        web["metadata"]["uid"],
        "burstable",
        container_id(1),
        usage_in_bytes=GIB,
        memsw_usage=GIB + 4096,
    )
    node.cgroups.add_container(db["metadata"]["uid"], "guaranteed", container_id(2))
    await agent.synced_with(lambda pods: len(pods) == 2)
    before = node.cgroups.snapshot()

    with capture_logs() as logs:
        report = await agent.controller.run_once()
        await agent.controller.run_once()

    assert report is not None
    assert changed_files(before, node.cgroups.snapshot()) == {}
    assert {(row.pod, row.state.value) for row in report.containers} == {
        ("web", "not-compared"),
        ("db", "not-compared"),
    }
    assert report.summary.kubepods_root == "memory/kubepods"
    labels = {"container": "app", "pod": "web", "namespace": "default"}
    assert agent.metric("container_swap_usage_bytes", **labels) == 4096
    assert agent.metric("kubelet_companion_container_swap_limit_expected_bytes", **labels) is None
    assert agent.metric("kubelet_companion_swap_limit_writes_total", result="success") == 0
    assert sum("LimitedSwap needs cgroup v2" in entry["event"] for entry in logs) == 1
