"""The readiness gate end to end against the fake API server: the issue's "Must show" list."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from structlog.testing import capture_logs

from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION, PRESETS
from tests.harness.fake_apiserver import FakeApiServer, RecordedRequest
from tests.harness.kubeobjects import controller_ref
from tests.harness.readiness_objects import GATE, KEYS, csinode, daemon_set, node, pod, taint
from tests.integration.readiness.conftest import GateAgent, StartGate

JSON = dict[str, Any]
NODE_PATH = "/api/v1/nodes/node-1"


def _taint_keys(server: FakeApiServer, name: str = "node-1") -> list[str]:
    return [t["key"] for t in server.get("nodes", name)["spec"].get("taints") or []]


def _lifted(agent: GateAgent, server: FakeApiServer) -> bool:
    """The taint is gone at the server and the agent has taken in its write's result."""
    return not _gated(server) and agent.metric("kubelet_companion_readiness_gate_held") == 0


def _gated(server: FakeApiServer, key: str = GATE) -> bool:
    return key in _taint_keys(server)


def _events(server: FakeApiServer, reason: str) -> list[JSON]:
    return [
        event
        for event in server.list("events", "default")
        if event.get("reason") == reason and event["involvedObject"].get("name") == "node-1"
    ]


def _node_patches(server: FakeApiServer) -> list[RecordedRequest]:
    return server.requests("PATCH", NODE_PATH)


def _taint_writes(server: FakeApiServer) -> list[RecordedRequest]:
    """Successful PATCHes of our Node that changed its taint list."""
    return [
        request
        for request in _node_patches(server)
        if request.status == 200
        and any(op.get("path") == "/spec/taints" for op in request.body or [])
    ]


def _input_events(agent: GateAgent) -> float:
    return agent.metric("kubelet_companion_readiness_input_events_total") or 0.0


async def _judged_every_event(agent: GateAgent) -> None:
    """Wait until an evaluation that saw every input event so far has finished (writes too)."""
    seen = _input_events(agent)
    await agent.until(
        lambda: (agent.metric("kubelet_companion_readiness_evaluated_input_events") or 0) >= seen,
        f"the gate to judge its first {seen:g} input events",
    )


async def _judged_an_event_after(agent: GateAgent, server: FakeApiServer, moment: float) -> None:
    """Let the monotonic time ``moment`` pass, then wait until the gate has judged an input
    event that came after it (a label on the critical pod) and finished that evaluation's
    writes: whatever a hold timer running out at ``moment`` would have done is done."""
    # Time must pass here (a hold time the agent measures on its real clock); what the test
    # then waits for is positive: an evaluation that started after ``moment``.
    await asyncio.sleep(max(0.0, moment - time.monotonic()))
    before = _input_events(agent)
    server.patch("pods", "cni-abcde", {"metadata": {"labels": {"later": "yes"}}}, "kube-system")
    await agent.until(lambda: _input_events(agent) > before, "the agent saw the later pod event")
    await _judged_every_event(agent)


def _adds_gate(request: RecordedRequest) -> bool:
    return any(
        op.get("path") == "/spec/taints" and GATE in [t["key"] for t in op.get("value") or []]
        for op in request.body or []
    )


async def test_a_node_with_no_critical_components_is_untainted_at_once(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 7: nothing critical on the node, so the first evaluation lifts the taint."""
    fake_apiserver.create(node(taints=[taint()]))
    agent = await start_gate()
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")
    annotations = fake_apiserver.get("nodes", "node-1")["metadata"]["annotations"]
    assert BOOTSTRAP_COMPLETED_ANNOTATION in annotations
    await agent.until(
        lambda: _events(fake_apiserver, "NodeCriticalComponentsReady"), "Normal event"
    )
    assert agent.metric("kubelet_companion_readiness_gate_held") == 0
    assert agent.metric("kubelet_companion_readiness_gate_wait_seconds") is not None


@pytest.mark.parametrize("matches", [False, True], ids=["selector-mismatch", "selector-match"])
async def test_a_daemonset_whose_nodeselector_does_not_match_is_not_required(
    fake_apiserver: FakeApiServer, start_gate: StartGate, matches: bool
) -> None:
    """Must show 1: a critical DaemonSet selecting other nodes does not hold the gate."""
    labels = {"pool": "gpu"} if matches else {"pool": "general"}
    fake_apiserver.create(node(taints=[taint()], labels=labels))
    fake_apiserver.create(daemon_set("gpu-plugin", node_selector={"pool": "gpu"}))
    agent = await start_gate()
    if not matches:
        await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")
        assert _events(fake_apiserver, "UnscheduledNodeCriticalDaemonSets") == []
        return
    await agent.until(
        lambda: _events(fake_apiserver, "UnscheduledNodeCriticalDaemonSets"), "Warning event"
    )
    (event,) = _events(fake_apiserver, "UnscheduledNodeCriticalDaemonSets")
    assert "kube-system/gpu-plugin" in event["message"]
    assert event["type"] == "Warning"
    assert _gated(fake_apiserver)
    assert agent.metric("kubelet_companion_readiness_missing", kind="daemonset") == 1


async def test_a_daemonset_not_tolerating_the_gate_is_reported_not_skipped(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 2: an intolerant critical DaemonSet gets a Warning Event and a log line."""
    fake_apiserver.create(node(taints=[taint()]))
    fake_apiserver.create(daemon_set("picky", tolerations=[]))
    with capture_logs() as logs:
        agent = await start_gate()
        await agent.until(
            lambda: _events(fake_apiserver, "IntolerantNodeCriticalDaemonSets"), "Warning event"
        )
    (event,) = _events(fake_apiserver, "IntolerantNodeCriticalDaemonSets")
    assert event["type"] == "Warning"
    assert "kube-system/picky" in event["message"]
    assert GATE in event["message"]
    warnings = [line for line in logs if line.get("daemonset") == "kube-system/picky"]
    assert warnings
    assert warnings[0]["log_level"] == "warning"
    assert agent.metric("kubelet_companion_readiness_intolerant_daemonsets") == 1
    # It cannot get a pod while the gate is held, so holding for it would deadlock the node.
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")


async def test_an_unready_critical_pod_holds_until_ready_then_lifts_exactly_once(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 3: the taint stays while a critical pod is unready and goes once, when Ready."""
    fake_apiserver.create(node(taints=[taint("other/keep"), taint()]))
    ds = fake_apiserver.create(daemon_set("cni"))
    fake_apiserver.create(pod("cni-abcde", owner=controller_ref(ds), ready=False))
    kubelet = fake_apiserver.kubelet("node-1", register_node=False)
    agent = await start_gate()
    await agent.until(lambda: _events(fake_apiserver, "UnreadyNodeCriticalPods"), "Warning event")
    (event,) = _events(fake_apiserver, "UnreadyNodeCriticalPods")
    assert "kube-system/cni-abcde" in event["message"]
    assert _gated(fake_apiserver)
    assert _node_patches(fake_apiserver) == []
    assert agent.metric("kubelet_companion_readiness_gate_held") == 1

    kubelet.set_ready("kube-system", "cni-abcde")
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")
    assert _taint_keys(fake_apiserver) == ["other/keep"]
    # More events arrive after the lift (pod and node updates): none may write again.
    fake_apiserver.patch("pods", "cni-abcde", {"metadata": {"labels": {"x": "y"}}}, "kube-system")
    fake_apiserver.patch("nodes", "node-1", {"metadata": {"labels": {"x": "y"}}})

    def saw_label() -> bool:
        cached = agent.cluster.node_state.node_object() or {}
        return bool(((cached.get("metadata") or {}).get("labels") or {}).get("x") == "y")

    await agent.until(saw_label, "the agent saw the later node update")
    await _judged_every_event(agent)
    assert len(_node_patches(fake_apiserver)) == 1
    assert len(_events(fake_apiserver, "NodeCriticalComponentsReady")) == 1
    assert (
        agent.metric(
            "kubelet_companion_readiness_taint_operations_total",
            operation="remove",
            result="success",
        )
        == 1
    )


async def test_a_missing_csi_driver_holds_until_the_csinode_lists_it(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 4: a required CSI driver keeps the taint until CSINode lists it."""
    fake_apiserver.create(node(taints=[taint()]))
    annotation = {f"{KEYS.csi_annotation_prefix}ebs": "ebs.csi.aws.com"}
    fake_apiserver.create(pod("ebs-csi-node", annotations=annotation))
    agent = await start_gate()
    await agent.until(
        lambda: _events(fake_apiserver, "UnreadyRequiredCSIDrivers"), "Warning event (no CSINode)"
    )
    assert "ebs.csi.aws.com" in _events(fake_apiserver, "UnreadyRequiredCSIDrivers")[0]["message"]

    before = _input_events(agent)
    fake_apiserver.create(csinode(drivers=["other.csi.k8s.io"]))
    await agent.until(lambda: _input_events(agent) > before, "the CSINode reached the gate")
    await _judged_every_event(agent)
    assert agent.metric("kubelet_companion_readiness_missing", kind="csi_driver") == 1
    assert _gated(fake_apiserver)

    def register(current: JSON) -> JSON:
        current["spec"]["drivers"].append({"name": "ebs.csi.aws.com", "nodeID": "i-123"})
        return current

    fake_apiserver.mutate("csinodes", "node-1", register)
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")
    assert agent.metric("kubelet_companion_readiness_missing", kind="csi_driver") == 0


async def test_a_taint_added_concurrently_survives_the_removal(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 5: a taint added while our PATCH is in flight survives; the conflict retries."""
    fake_apiserver.create(node(taints=[taint()]))
    ds = fake_apiserver.create(daemon_set("cni"))
    fake_apiserver.create(pod("cni-abcde", owner=controller_ref(ds), ready=False))
    kubelet = fake_apiserver.kubelet("node-1", register_node=False)
    agent = await start_gate()
    await agent.until(lambda: _events(fake_apiserver, "UnreadyNodeCriticalPods"), "Warning event")
    # Hold our first PATCH at the server's door, and add a taint meanwhile, as a racing
    # controller would: the PATCH's resourceVersion test must fail and be rebuilt.
    fake_apiserver.faults.hang("PATCH", "^/api/v1/nodes/node-1$", seconds=1.0)
    kubelet.set_ready("kube-system", "cni-abcde")
    await asyncio.to_thread(
        fake_apiserver.wait_for_request, lambda r: r.method == "PATCH" and r.path == NODE_PATH
    )

    def add_racing_taint(current: JSON) -> JSON:
        current["spec"]["taints"].append({"key": "racer/added", "effect": "NoExecute"})
        return current

    fake_apiserver.mutate("nodes", "node-1", add_racing_taint)
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")
    assert _taint_keys(fake_apiserver) == ["racer/added"]
    statuses = [request.status for request in _node_patches(fake_apiserver)]
    assert statuses[0] in (409, 422)
    assert statuses[-1] == 200
    assert (
        agent.metric(
            "kubelet_companion_readiness_taint_operations_total",
            operation="remove",
            result="retried",
        )
        == 1
    )


async def test_a_409_from_the_server_is_retried(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 5: an outright 409 Conflict on the PATCH is retried with a fresh read."""
    fake_apiserver.create(node(taints=[taint("keep/me"), taint()]))
    fake_apiserver.faults.add("PATCH", "^/api/v1/nodes/node-1$", status=409, reason="Conflict")
    agent = await start_gate()
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the gate taint is removed")
    assert [r.status for r in _node_patches(fake_apiserver)] == [409, 200]
    assert _taint_keys(fake_apiserver) == ["keep/me"]
    assert agent.metric("kubelet_companion_readiness_gate_held") == 0


async def _lift_then_break(
    fake_apiserver: FakeApiServer, start_gate: StartGate, readiness: JSON
) -> tuple[GateAgent, Any, float]:
    fake_apiserver.create(node(taints=[taint()]))
    ds = fake_apiserver.create(daemon_set("cni"))
    fake_apiserver.create(pod("cni-abcde", owner=controller_ref(ds), ready=True))
    kubelet = fake_apiserver.kubelet("node-1", register_node=False)
    agent = await start_gate(readiness)
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the first lift")
    kubelet.set_ready("kube-system", "cni-abcde", ready=False)
    broke_at = time.monotonic()
    await agent.until(
        lambda: agent.metric("kubelet_companion_readiness_missing", kind="pod") == 1,
        "the agent saw the pod turn unready",
    )
    return agent, kubelet, broke_at


HOLD_SECONDS = 1.0
"""The ``holdTime`` the two mode tests configure."""


async def test_bootstrap_only_never_readds_the_taint(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 6: in bootstrap-only mode a later unready pod never brings the taint back."""
    agent, _, _ = await _lift_then_break(
        fake_apiserver, start_gate, {"mode": "bootstrap-only", "holdTime": f"{HOLD_SECONDS:g}s"}
    )
    # The gate judged the unready pod before now: continuous mode would re-add by this time.
    await _judged_an_event_after(agent, fake_apiserver, time.monotonic() + HOLD_SECONDS)
    assert not _gated(fake_apiserver)
    assert len(_taint_writes(fake_apiserver)) == 1
    assert agent.metric("kubelet_companion_readiness_gate_held") == 0


async def test_continuous_readds_after_the_hold_time_only_once(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """Must show 6: in continuous mode the taint returns after holdTime, with one write only."""
    agent, kubelet, broke_at = await _lift_then_break(
        fake_apiserver, start_gate, {"mode": "continuous", "holdTime": f"{HOLD_SECONDS:g}s"}
    )
    await agent.until(lambda: _gated(fake_apiserver), "the gate taint is re-added")
    assert time.monotonic() - broke_at >= HOLD_SECONDS
    # Another hold time after the add, a later event judged: still one add, no flapping.
    await _judged_an_event_after(agent, fake_apiserver, time.monotonic() + HOLD_SECONDS)
    writes = _taint_writes(fake_apiserver)
    assert [_adds_gate(w) for w in writes] == [False, True]
    assert agent.metric("kubelet_companion_readiness_gate_held") == 1
    # Events are posted by tasks of their own, after the evaluation that decided them.
    await agent.until(
        lambda: _events(fake_apiserver, "NodeCriticalComponentsNotReady"), "the Warning event"
    )

    # Hysteresis: once Ready again, the re-added taint goes only after a full hold time.
    kubelet.set_ready("kube-system", "cni-abcde")
    healed_at = time.monotonic()
    await agent.until(lambda: _lifted(agent, fake_apiserver), "the re-added taint is lifted")
    assert time.monotonic() - healed_at >= HOLD_SECONDS
    assert len(_taint_writes(fake_apiserver)) == 3


async def test_a_completed_node_is_left_alone_by_a_restarted_agent(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """A node annotated bootstrap-completed and untainted gets no write from a new agent."""
    fake_apiserver.create(
        node(taints=[], annotations={BOOTSTRAP_COMPLETED_ANNOTATION: "2025-01-01T00:00:00Z"})
    )
    fake_apiserver.create(pod("dns", ready=False))
    agent = await start_gate()
    await agent.until(
        lambda: agent.metric("kubelet_companion_readiness_missing", kind="pod") == 1,
        "the first evaluation",
    )
    await _judged_every_event(agent)
    assert _node_patches(fake_apiserver) == []


async def test_the_gardener_preset_lifts_gardeners_taint(
    fake_apiserver: FakeApiServer, start_gate: StartGate
) -> None:
    """With preset gardener the agent waits on Gardener's label and removes Gardener's taint."""
    keys = PRESETS["gardener"]
    fake_apiserver.create(node(taints=[taint(keys.taint), taint("other/keep")]))
    fake_apiserver.create(pod("calico", labels={keys.label: "true"}, ready=False))
    fake_apiserver.create(pod("ignored", ready=False))  # our default label means nothing here
    kubelet = fake_apiserver.kubelet("node-1", register_node=False)
    agent = await start_gate({"preset": "gardener"})
    await agent.until(
        lambda: agent.metric("kubelet_companion_readiness_missing", kind="pod") == 1,
        "waiting for the Gardener-labelled pod only",
    )
    assert _gated(fake_apiserver, keys.taint)
    kubelet.set_ready("kube-system", "calico")
    await agent.until(lambda: not _gated(fake_apiserver, keys.taint), "Gardener's taint removed")
    assert _taint_keys(fake_apiserver) == ["other/keep"]
