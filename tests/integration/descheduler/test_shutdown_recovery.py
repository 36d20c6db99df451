"""NodeShutdownRecovery end to end: NodeReports through the API server, taints on the Nodes.

Only a node whose agent's last word the running descheduler witnessed (shutdown completed,
in the boot the Node still shows, seen before the node went NotReady) and that has been
NotReady long enough gets ``node.kubernetes.io/out-of-service``, recorded as ours on the
descheduler's Lease; once it is Ready again a later cycle (of this process or the next)
removes it. A node merely cut off, one that booted since, one whose report changed after it
went NotReady (someone else wrote it), one whose report was only found at start, and an
operator's own out-of-service taint are left alone, the last also when its node carries our
mark (any node may write its own annotations); such a mark never keeps the taint off a node
that is really down.

The descheduler runs on a hand-driven clock (``tests.harness.clock``): a node NotReady for
minutes takes no real time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kubesemantics.nodekeys import OUT_OF_SERVICE_ANNOTATION
from agent.kubesemantics.taintownership import out_of_service_taint
from agent.kubesemantics.timestamps import rfc3339
from agent.telemetry.metrics import new_registry
from tests.harness import kubeobjects
from tests.harness.clock import HandClock
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.harness.nodereport import put_report, register_crd
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import left_in_flight, taint_record

RECOVERY_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: recovery
    pluginConfig:
    - name: "NodeShutdownRecovery"
      args:
        notReadySeconds: 120
    plugins:
      deschedule:
        enabled: ["NodeShutdownRecovery"]
"""
CYCLES = "kubelet_companion_descheduler_cycles_total"
OUT_OF_SERVICE = {
    "key": "node.kubernetes.io/out-of-service",
    "value": "nodeshutdown",
    "effect": "NoExecute",
}


def _node(name: str, *, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return kubeobjects.node(
        name, taints=taints or [], ready=True, status={"nodeInfo": {"bootID": "boot-1"}}
    )


def _set_ready(
    server: FakeApiServer, name: str, status: str, since: float, boot: str = "boot-1"
) -> None:
    """What kubelet (or the node lifecycle controller) writes: Ready and since when."""
    conditions = [{"type": "Ready", "status": status, "lastTransitionTime": rfc3339(since)}]
    server.patch(
        "nodes",
        name,
        {"status": {"conditions": conditions, "nodeInfo": {"bootID": boot}}},
        subresource="status",
        patch_type="merge",
    )


def _report(server: FakeApiServer, name: str, uid: str, state: str, observed: float) -> None:
    """What the node's agent writes: its report, owned by its Node, in boot-1."""
    status = {
        "observedTime": rfc3339(observed),
        "bootID": "boot-1",
        "heartbeatSeconds": 60,
        "shutdown": {"state": state},
        "agentStopped": state == "completed",
    }
    put_report(server, name, status, node_uid=uid)


def _taints(server: FakeApiServer, node: str) -> list[dict[str, Any]]:
    return list(server.get("nodes", node)["spec"].get("taints") or [])


async def _cycles_until(clock: HandClock, condition: Callable[[], bool], what: str) -> None:
    """Move the clock a cycle's interval at a time until ``condition`` holds (each move lets
    the loop run one cycle)."""
    await wait_until(condition, what, 5, interval=0.05, each=lambda: clock.advance(60))


async def test_out_of_service_only_on_a_witnessed_last_word_and_removed_when_ready(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The shut-down nodes are tainted (the Event names the evidence), one of them although
    its agent wrote our mark on it beforehand; no other node is; Ready again, a node is
    untainted, but an operator's taint beside a mark we did not record stays."""
    register_crd(fake_apiserver)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(RECOVERY_POLICY)
    clock = HandClock(start=1000.0, epoch=time.time() - 1000.0)
    now = clock.now()
    names = ("a", "b", "off", "marked", "forged", "cut", "rebooted", "recent", "found", "manual")
    uids = {
        name: fake_apiserver.create(
            _node(name, taints=[OUT_OF_SERVICE] if name == "manual" else None)
        )["metadata"]["uid"]
        for name in names
    }
    # What their agents may write on their own Nodes: our mark, without our record.
    for name in ("marked", "manual"):
        _forge_mark(fake_apiserver, name)
    for name in names:
        _report(fake_apiserver, name, uids[name], "none", now)
    # Cut off ten minutes ago; its report is then rewritten by someone who can still write.
    _set_ready(fake_apiserver, "forged", "Unknown", now - 600)
    # Found already completed when the descheduler starts: when it changed, only it says.
    _report(fake_apiserver, "found", uids["found"], "completed", now - 30)
    _set_ready(fake_apiserver, "found", "Unknown", now - 20)
    stop = asyncio.Event()
    registry = new_registry("descheduler")
    run = asyncio.create_task(
        run_live(
            policy_file,
            kube_api,
            descheduling_interval=60,
            clock=clock,
            stop=stop,
            registry=registry,
        )
    )
    try:
        # The first cycle has run: the caches listed what was there before.
        await wait_until(
            lambda: registry.get_sample_value(CYCLES, {"outcome": "planned"}), "a first cycle"
        )
        # One watch per kind delivers in order: once "off" is seen, everything before is.
        for name in ("forged", "rebooted", "recent", "marked", "off"):
            _report(fake_apiserver, name, uids[name], "completed", clock.now())
        _set_ready(fake_apiserver, "cut", "Unknown", clock.now() + 5)
        _set_ready(fake_apiserver, "rebooted", "Unknown", clock.now() + 5, boot="boot-2")
        _set_ready(fake_apiserver, "recent", "Unknown", clock.now() + 3000)
        _set_ready(fake_apiserver, "marked", "Unknown", clock.now() + 5)
        _set_ready(fake_apiserver, "off", "Unknown", clock.now() + 5)
        await _cycles_until(clock, lambda: bool(_taints(fake_apiserver, "off")), "off tainted")

        for name in ("off", "marked"):
            assert _taints(fake_apiserver, name) == [OUT_OF_SERVICE], name
            annotations = fake_apiserver.get("nodes", name)["metadata"]["annotations"]
            assert annotations[OUT_OF_SERVICE_ANNOTATION] == "nodeshutdown"
            assert taint_record(fake_apiserver).get(OUT_OF_SERVICE_ANNOTATION, name), name
        for name in ("a", "b", "forged", "cut", "rebooted", "recent", "found"):
            assert _taints(fake_apiserver, name) == [], name
        assert _taints(fake_apiserver, "manual") == [OUT_OF_SERVICE]

        def recovery_events() -> list[dict[str, Any]]:
            return [
                e
                for e in fake_apiserver.list("events", "default")
                if e["reason"] == "NodeShutdownRecovery"
            ]

        # Events are posted by tasks of their own, after the taints: waited for, not read.
        await wait_until(lambda: len(recovery_events()) >= 2, "the two NodeShutdownRecovery Events")
        events = recovery_events()
        assert sorted(e["involvedObject"]["name"] for e in events) == ["marked", "off"]
        events = [e for e in events if e["involvedObject"]["name"] == "off"]
        assert f"owned by Node uid {uids['off']}" in events[0]["message"]
        assert "completed in boot boot-1" in events[0]["message"]

        _set_ready(fake_apiserver, "off", "True", clock.now())
        _set_ready(fake_apiserver, "manual", "True", clock.now())
        await _cycles_until(clock, lambda: not _taints(fake_apiserver, "off"), "off untainted")
        assert OUT_OF_SERVICE_ANNOTATION not in (
            fake_apiserver.get("nodes", "off")["metadata"].get("annotations") or {}
        )
        assert taint_record(fake_apiserver).get(OUT_OF_SERVICE_ANNOTATION, "off") is None
        assert _taints(fake_apiserver, "manual") == [OUT_OF_SERVICE]
    finally:
        stop.set()
        assert await asyncio.wait_for(run, 10) == 0


async def test_a_one_shot_run_never_takes_a_found_report_for_evidence(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A Job finds every report already written: none of them witnessed, so a node that
    looks shut down for ten minutes is left alone (and the run ends with exit 0)."""
    register_crd(fake_apiserver)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(RECOVERY_POLICY)
    for name in ("a", "b"):
        fake_apiserver.create(_node(name))
    uid = fake_apiserver.create(_node("off"))["metadata"]["uid"]
    _report(fake_apiserver, "off", uid, "completed", time.time() - 700)
    _set_ready(fake_apiserver, "off", "Unknown", time.time() - 600)
    code = await run_live(policy_file, kube_api)
    assert code == 0
    assert _taints(fake_apiserver, "off") == []


def _forge_mark(server: FakeApiServer, name: str) -> None:
    """Our out-of-service mark on a node, as its agent may write it (not in our record)."""
    server.patch(
        "nodes",
        name,
        {"metadata": {"annotations": {OUT_OF_SERVICE_ANNOTATION: "nodeshutdown"}}},
        patch_type="merge",
    )


async def test_the_next_run_takes_off_an_out_of_service_taint_in_flight_once_ready(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, async_kube: AsyncKube, tmp_path: Path
) -> None:
    """A run that tainted ``off`` ended while the node was down; it is Ready again. The next
    run (a new process, a new leader) knows the taint is ours from the record on the Lease
    and takes it off with its mark and its entry. ``manual``, Ready, carries an operator's
    out-of-service taint and our mark, which its agent wrote: neither is touched."""
    register_crd(fake_apiserver)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(RECOVERY_POLICY)
    for name in ("a", "b", "off"):
        fake_apiserver.create(_node(name))
    fake_apiserver.create(_node("manual", taints=[OUT_OF_SERVICE]))
    _forge_mark(fake_apiserver, "manual")
    await left_in_flight(async_kube, "off", out_of_service_taint())
    code = await run_live(policy_file, kube_api)
    assert code == 0
    assert _taints(fake_apiserver, "off") == []
    assert OUT_OF_SERVICE_ANNOTATION not in (
        fake_apiserver.get("nodes", "off")["metadata"].get("annotations") or {}
    )
    assert len(taint_record(fake_apiserver)) == 0
    assert _taints(fake_apiserver, "manual") == [OUT_OF_SERVICE]
    annotations = fake_apiserver.get("nodes", "manual")["metadata"]["annotations"]
    assert annotations[OUT_OF_SERVICE_ANNOTATION] == "nodeshutdown"
