"""The footprint benchmark's API server: the fake, seeded with a real-sized cluster, in a child
process of its own (so its CPU is never counted as the agent's), with pod churn on one node.

Run by ``footprint.py`` as ``python footprint_cluster.py KUBECONFIG NODES NODE_PODS``; it
prints one ``ready {json}`` line once seeded, then obeys one command per stdin line:
``churn RATE`` (pods per minute on the agent's node; 0 stops), ``dump PATH`` (the request
log as JSON lines, then ``dumped``) and ``quit`` (or end of input).

The cluster: ``NODES`` nodes of 30 pods each as an API server sends them (the descheduler
benchmark's generator), the agent's node with ``NODE_PODS`` pods whose containers have
runtime IDs (so the swap audit and the NodeReport sampler find their cgroups in the fixture
tree the parent builds), three critical DaemonSets in ``kube-system`` with a Ready pod on the
agent's node, and the NodeReport CRD. Churn: every ``60/RATE`` s a pod is created on the
node (Pending), the previous one starts (a container ID, Running, Ready, as its kubelet
reports it), and the one created ``LIVE`` ticks earlier is deleted (grace 0, as after its
kubelet confirmed the kill): create, start and become ready, delete.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from scripts.benchmarks import descheduler_cluster
from tests.harness import kubeobjects
from tests.harness.cgroups import ContainerFixture, container_id, pod_object
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import PAUSE_IMAGE, condition, container_status, controller_ref
from tests.harness.nodereport import register_crd
from tests.harness.readiness_objects import daemon_set
from tests.harness.readiness_objects import pod as critical_pod

AGENT_NODE = "footprint-node"
CHURN_NAMESPACE = "churn"
DAEMON_SETS = ("cni", "kube-proxy", "csi-node")
LIVE = 5
"""Churn pods alive at once: a pod is deleted ``LIVE`` ticks after it was created."""
BOOKMARK_SECONDS = 60.0
"""A real API server sends a watch BOOKMARK about once a minute (the fake's default of 1 s
is for tests); every bookmark costs the agent a wake-up, so the benchmark uses the real rate."""

_API_VERSIONS = {
    "Namespace": "v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "Node": "v1",
    "Pod": "v1",
    "PodDisruptionBudget": "policy/v1",
}


def _as_created(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    metadata = {
        k: v
        for k, v in obj["metadata"].items()
        if k not in {"uid", "resourceVersion", "managedFields"}
    }
    return {"apiVersion": _API_VERSIONS[kind], "kind": kind, **obj, "metadata": metadata}


def agent_node_pods(count: int) -> list[dict[str, Any]]:
    """``count`` pods on the agent's node, each with one or two containers with runtime IDs."""
    pods = []
    for number in range(count):
        containers = [
            ContainerFixture(
                f"c{side}",
                container_id(number * 2 + side + 1),
                {"cpu": "100m", "memory": "128Mi"},
                {"memory": "256Mi"} if number % 3 else {},
            )
            for side in range(1 + number % 2)
        ]
        pods.append(
            pod_object(
                f"app-{number:03d}-7d9f8c6b5-x{number:04x}",
                None,
                *containers,
                namespace=f"team-{number % descheduler_cluster.NAMESPACES}",
                node=AGENT_NODE,
                labels={"app": f"app-{number:03d}"},
                ready=True,
            )
        )
    return pods


def seed(server: FakeApiServer, nodes: int, node_pods: int) -> dict[str, Any]:
    """Seed the cluster; return what the parent needs to lay out the node's cgroups."""
    register_crd(server)
    cluster = descheduler_cluster.cluster(nodes)
    server.seed(
        _as_created(kind, obj)
        for kind in ("Namespace", "PriorityClass", "Node", "Pod", "PodDisruptionBudget")
        for obj in cluster[kind]
    )
    del cluster
    agent_node = descheduler_cluster.node(nodes)
    agent_node["metadata"]["name"] = AGENT_NODE
    agent_node["metadata"]["labels"]["kubernetes.io/hostname"] = AGENT_NODE
    server.seed([_as_created("Node", agent_node), kubeobjects.namespace(CHURN_NAMESPACE)])
    sets = [server.create(daemon_set(name)) for name in DAEMON_SETS]
    daemon_pods = [
        critical_pod(
            f"{ds['metadata']['name']}-{AGENT_NODE}",
            node=AGENT_NODE,
            owner=controller_ref(ds),
            uid=None,
        )
        for ds in sets
    ]
    server.seed([*daemon_pods, *agent_node_pods(node_pods - len(daemon_pods))])
    on_node = server.list("pods", None, field_selector=f"spec.nodeName={AGENT_NODE}")
    return {
        "node": AGENT_NODE,
        "pods": [
            {
                "uid": p["metadata"]["uid"],
                "qos": p["status"].get("qosClass", "BestEffort"),
                "containers": [
                    c["containerID"].split("://", 1)[1]
                    for c in p["status"].get("containerStatuses") or []
                    if c.get("containerID")
                ],
            }
            for p in on_node
        ],
        "objects": len(server.list("pods", None)) + len(server.list("nodes", None)),
    }


class Churn:
    """Create, make Ready and delete pods on the agent's node at a steady rate (a thread)."""

    def __init__(self, server: FakeApiServer) -> None:
        self.server = server
        self.rate = 0.0
        self.changed = threading.Event()
        self.stopped = False
        self.created = 0
        self.thread = threading.Thread(target=self._run, name="churn", daemon=True)
        self.thread.start()

    def set_rate(self, per_minute: float) -> None:
        self.rate = per_minute
        self.changed.set()

    def stop(self) -> None:
        self.stopped = True
        self.changed.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        while not self.stopped:
            if self.rate <= 0:
                self.changed.wait()
                self.changed.clear()
                continue
            self._tick()
            self.changed.wait(60.0 / self.rate)
            self.changed.clear()

    def _tick(self) -> None:
        number = self.created
        self.created += 1
        name = f"churn-{number:06d}"
        self.server.create(
            kubeobjects.pod(
                name,
                AGENT_NODE,
                namespace=CHURN_NAMESPACE,
                labels={"app": "c"},
                containers=["main"],
                image=PAUSE_IMAGE,
            )
        )
        if number >= 1:
            started = container_status(
                "main",
                container_id=f"containerd://{container_id(10**6 + number)}",
                fields={"state": {"running": {"startedAt": "2026-11-23T00:00:00Z"}}},
            )
            self.server.patch(
                "pods",
                f"churn-{number - 1:06d}",
                {
                    "status": {
                        "phase": "Running",
                        "conditions": [condition("Ready")],
                        "containerStatuses": [started],
                    }
                },
                CHURN_NAMESPACE,
                subresource="status",
            )
        if number >= LIVE:
            self.server.delete(
                "pods", f"churn-{number - LIVE:06d}", CHURN_NAMESPACE, grace_period_seconds=0
            )


def dump(server: FakeApiServer, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for request in server.requests():
            query = {k: v for k, v in request.query.items() if k != "resourceVersion"}
            out.write(
                json.dumps(
                    {
                        "t": request.monotonic,
                        "method": request.method,
                        "path": request.path,
                        "query": query,
                        "watch": request.is_watch,
                        "status": request.status,
                        "bytes": request.response_bytes,
                    }
                )
                + "\n"
            )


def main() -> int:
    kubeconfig, nodes, node_pods = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with FakeApiServer(bookmark_interval=BOOKMARK_SECONDS, pdb_controller=False) as server:
        facts = seed(server, nodes, node_pods)
        server.write_kubeconfig(kubeconfig)
        server.requests()  # nothing yet: the log holds the agent's requests only
        churn = Churn(server)
        print("ready " + json.dumps(facts), flush=True)
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "churn":
                churn.set_rate(float(argument))
            elif command == "dump":
                dump(server, Path(argument))
                print(f"dumped {churn.created}", flush=True)
            elif command == "quit":
                break
        churn.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
