"""NodeShutdownRecovery end to end: NodeReports through the API server, taints on the Nodes.

Only the node whose agent reported the shutdown completed, in the boot the Node still shows,
and that has been NotReady long enough, gets ``node.kubernetes.io/out-of-service``; once it
is Ready again the next run removes it. A node merely cut off, one that booted since its
report, and an operator's own out-of-service taint are left alone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agent.descheduler.app import RunOptions, run_descheduler
from agent.descheduler.policy import load_policy
from agent.kube.api import KubeApi
from agent.kube.taintownership import OUT_OF_SERVICE_ANNOTATION
from agent.kube.timestamps import rfc3339
from tests.harness.fake_apiserver import FakeApiServer, manifests
from tests.harness.nodereport import register_crd

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
OUT_OF_SERVICE = {
    "key": "node.kubernetes.io/out-of-service",
    "value": "nodeshutdown",
    "effect": "NoExecute",
}


def _node(
    name: str,
    *,
    ready: bool = True,
    down_for: float = 600,
    boot: str = "boot-1",
    taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    node = manifests.node(name, taints=taints or [])
    node["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True" if ready else "Unknown",
            "lastTransitionTime": rfc3339(time.time() - down_for),
        }
    ]
    node["status"]["nodeInfo"] = {"bootID": boot}
    return node


def _report(node: str, state: str, boot: str = "boot-1") -> dict[str, Any]:
    return {
        "apiVersion": "kubelet-companion.io/v1alpha1",
        "kind": "NodeReport",
        "metadata": {"name": node},
        "status": {
            "observedTime": rfc3339(time.time() - 700),
            "bootID": boot,
            "heartbeatSeconds": 60,
            "shutdown": {"state": state},
            "agentStopped": state == "completed",
        },
    }


async def _run_once(kube_api: KubeApi, policy_file: Path) -> int:
    return await run_descheduler(
        load_policy(policy_file),
        RunOptions(metrics_bind_address="127.0.0.1:0", qps=0),
        kube_api,
        install_signal_handlers=False,
    )


def _taints(server: FakeApiServer, node: str) -> list[dict[str, Any]]:
    return list(server.get("nodes", node)["spec"].get("taints") or [])


async def test_out_of_service_only_with_evidence_and_removed_when_ready(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The shut-down node is tainted and annotated, no other; Ready again, it is untainted."""
    register_crd(fake_apiserver)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(RECOVERY_POLICY)
    for name in ("a", "b"):
        fake_apiserver.create(_node(name))
    fake_apiserver.create(_node("off", ready=False))  # shutdown completed, still that boot
    fake_apiserver.create(_node("cut", ready=False))  # agent saw no shutdown: maybe running
    fake_apiserver.create(_node("rebooted", ready=False, boot="boot-2"))  # booted since
    fake_apiserver.create(_node("recent", ready=False, down_for=30))  # not long enough
    fake_apiserver.create(_node("manual", taints=[OUT_OF_SERVICE]))  # an operator's taint
    fake_apiserver.create(_report("off", "completed"))
    fake_apiserver.create(_report("cut", "none"))
    fake_apiserver.create(_report("rebooted", "completed"))
    fake_apiserver.create(_report("recent", "completed"))

    assert await _run_once(kube_api, policy_file) == 0
    assert _taints(fake_apiserver, "off") == [OUT_OF_SERVICE]
    annotations = fake_apiserver.get("nodes", "off")["metadata"]["annotations"]
    assert annotations[OUT_OF_SERVICE_ANNOTATION] == "nodeshutdown"
    for name in ("cut", "rebooted", "recent", "a", "b"):
        assert _taints(fake_apiserver, name) == [], name
    assert _taints(fake_apiserver, "manual") == [OUT_OF_SERVICE]
    events = fake_apiserver.list("events", "default")
    assert [
        e["involvedObject"]["name"] for e in events if e["reason"] == "NodeShutdownRecovery"
    ] == ["off"]

    fake_apiserver.patch(
        "nodes",
        "off",
        {"status": {"conditions": _node("off")["status"]["conditions"]}},
        subresource="status",
        patch_type="merge",
    )
    assert await _run_once(kube_api, policy_file) == 0
    assert _taints(fake_apiserver, "off") == []
    assert OUT_OF_SERVICE_ANNOTATION not in (
        fake_apiserver.get("nodes", "off")["metadata"].get("annotations") or {}
    )
    assert _taints(fake_apiserver, "manual") == [OUT_OF_SERVICE]
