"""Write the sample cluster snapshot that ``descheduler plan`` is shown on (docs/plan.md).

    .venv/bin/python -m scripts.sample_snapshot [--out examples/snapshot.json.gz]

Deterministic: the same bytes every run (fixed names, UIDs derived from names, fixed times,
gzip without a timestamp), so the committed file only changes when this script does. The
output has the shape ``kubectl get nodes,pods,pdb,namespaces,priorityclasses,deployments,
replicasets,statefulsets -A -o json`` prints, with the fields the API server fills in
(priority from the class, QoS class, the default not-ready/unreachable tolerations, PDB status
as the disruption controller computes it), so the same objects can be loaded into an API
server unchanged (owner references re-pointed to the UIDs it gives the controllers).

The cluster: ten nodes in three zones. node-a1 and node-a2 are over-committed; node-a4 and
node-b3 are nearly empty; node-gpu1 is big, empty and tainted for GPU jobs; node-edge1 takes
only edge pods (NoExecute taint); node-c1 is cordoned. Workloads: web (a PodDisruptionBudget
lets only two of its pods go), cart (required node affinity to zone-a), checkout (required
anti-affinity: one per node, but two share node-b2), redis (three replicas piled on one
node), postgres (a StatefulSet with claims), GPU trainers, a metrics proxy on the GPU node
without the toleration (it ran there before the taint), edge gateways, DaemonSets, finished
Job pods and a bare debug pod.
"""

from __future__ import annotations

import argparse
import gzip
import json
import uuid
from pathlib import Path
from typing import Any

from tests.harness import kubeobjects
from tests.harness.kubeobjects import (
    DEFAULT_TOLERATIONS,
    condition,
    container_status,
    owner_ref,
    taint,
)

JSON = dict[str, Any]
CREATED = "2026-11-01T08:00:00Z"
STARTED = "2026-11-01T08:00:05Z"
NAMESPACE_UUID = uuid.UUID("6f0c2b4e-52f5-4c1e-9d1a-2a7c0b1d9e10")

PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
    "shop-critical": 100_000,
}
NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "shop", "data", "ml")
NAMESPACES += ("edge", "monitoring", "batch")

# name: (zone, cpu, memory Gi, taints, extra labels, unschedulable)
NODES: dict[str, tuple[str, str, int, list[JSON], dict[str, str], bool]] = {
    "node-a1": ("zone-a", "4", 16, [], {}, False),
    "node-a2": ("zone-a", "4", 16, [], {}, False),
    "node-a3": ("zone-a", "4", 16, [], {}, False),
    "node-a4": ("zone-a", "4", 16, [], {}, False),
    "node-b1": ("zone-b", "4", 16, [], {}, False),
    "node-b2": ("zone-b", "4", 16, [], {}, False),
    "node-b3": ("zone-b", "4", 16, [], {}, False),
    "node-gpu1": (
        "zone-b",
        "16",
        64,
        [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        {"accelerator": "nvidia"},
        False,
    ),
    "node-edge1": (
        "zone-c",
        "8",
        32,
        [{"key": "dedicated", "value": "edge", "effect": "NoExecute"}],
        {"role": "edge"},
        False,
    ),
    "node-c1": ("zone-c", "4", 16, [], {}, True),
}


def uid(*parts: str) -> str:
    return str(uuid.uuid5(NAMESPACE_UUID, "/".join(parts)))


def node(name: str) -> JSON:
    """A node of ``NODES``, Ready since ``CREATED``; a cordoned one carries its taint."""
    zone, cpu, memory, taints, labels, unschedulable = NODES[name]
    resources = {"cpu": cpu, "memory": f"{memory}Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    if unschedulable:
        taints = [taint("node.kubernetes.io/unschedulable"), *taints]
    ready = condition(
        "Ready", reason="KubeletReady", lastHeartbeatTime=CREATED, lastTransitionTime=CREATED
    )
    return kubeobjects.node(
        name,
        uid=uid("node", name),
        created=CREATED,
        labels={
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": zone,
            **labels,
        },
        taints=taints,
        unschedulable=unschedulable,
        status={"capacity": resources, "allocatable": resources, "conditions": [ready]},
    )


def owner(kind: str, name: str, namespace: str) -> JSON:
    return owner_ref(kind, name, uid=uid(kind, namespace, name), block_owner_deletion=True)


def workload_pod(
    name: str,
    namespace: str,
    node_name: str,
    *,
    app: str,
    cpu: str,
    memory: str,
    owner_kind: str | None = "ReplicaSet",
    owner_name: str | None = None,
    priority_class: str | None = None,
    tolerations: list[JSON] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: JSON | None = None,
    volumes: list[JSON] | None = None,
    phase: str = "Running",
    limits: bool = False,
) -> JSON:
    """A pod of ``app`` with what the API server and the kubelet fill in: priority from its
    class, the default tolerations, QoS class, conditions and its container's status."""
    running = phase == "Running"
    image = f"registry.example/{app}:1.0"
    state = (
        {"running": {"startedAt": STARTED}}
        if running
        else {"terminated": {"exitCode": 0, "reason": "Completed"}}
    )
    return kubeobjects.pod(
        name,
        node_name,
        namespace=namespace,
        uid=uid("pod", namespace, name),
        created=CREATED,
        labels={"app": app},
        owner=None if owner_kind is None else owner(owner_kind, owner_name or app, namespace),
        containers=[app],
        image=image,
        cpu=cpu,
        memory=memory,
        limits={"cpu": cpu, "memory": memory} if limits else None,
        priority=PRIORITY_CLASSES.get(priority_class or "", 0),
        priority_class=priority_class or None,
        grace_seconds=30,
        tolerations=[*(tolerations or []), *DEFAULT_TOLERATIONS],
        node_selector=node_selector or None,
        affinity=affinity or None,
        volumes=volumes or (),
        phase=phase,
        conditions=[
            condition(kind, running or kind == "PodScheduled")
            for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        container_statuses=[
            container_status(
                app,
                ready=running,
                fields={"image": image, "restartCount": 0, "started": running, "state": state},
            )
        ],
        start_time=STARTED,
        spec={
            "restartPolicy": "Never" if owner_kind == "Job" else "Always",
            "schedulerName": "default-scheduler",
        },
        status={"qosClass": "Guaranteed" if limits else "Burstable"},
    )


def replicas(app: str, namespace: str, layout: dict[str, int], **kwargs: Any) -> list[JSON]:
    """``layout``: node -> how many pods of ``app`` run there (ReplicaSet ``<app>-<hash>``)."""
    owner_name = f"{app}-{uid(app)[:10].replace('-', '')}"
    pods = []
    index = 0
    for node_name, count in layout.items():
        for _ in range(count):
            suffix = uid(app, str(index)).replace("-", "")[:5]
            pods.append(
                workload_pod(
                    f"{owner_name}-{suffix}",
                    namespace,
                    node_name,
                    app=app,
                    owner_name=owner_name,
                    **kwargs,
                )
            )
            index += 1
    return pods


def daemon_set_pods(
    app: str, namespace: str, cpu: str, memory: str, priority: str | None
) -> list[JSON]:
    """A DaemonSet's pod on every node, tolerating everything."""
    return [
        workload_pod(
            f"{app}-{uid(app, name).replace('-', '')[:5]}",
            namespace,
            name,
            app=app,
            cpu=cpu,
            memory=memory,
            owner_kind="DaemonSet",
            priority_class=priority,
            tolerations=[{"operator": "Exists"}],
        )
        for name in NODES
    ]


def zone_a_only() -> JSON:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["zone-a"],
                            }
                        ]
                    }
                ]
            }
        }
    }


def one_per_node(app: str) -> JSON:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": app}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def workloads() -> list[JSON]:
    pods: list[JSON] = []
    pods += daemon_set_pods("kube-proxy", "kube-system", "100m", "128Mi", "system-node-critical")
    pods += daemon_set_pods("node-exporter", "monitoring", "50m", "64Mi", None)
    pods += replicas(
        "coredns",
        "kube-system",
        {"node-a3": 1, "node-b1": 1},
        cpu="100m",
        memory="70Mi",
        priority_class="system-cluster-critical",
    )
    pods += replicas(
        "web",
        "shop",
        {"node-a1": 6, "node-a2": 5, "node-a3": 1, "node-b1": 1, "node-b2": 1},
        cpu="250m",
        memory="512Mi",
    )
    pods += replicas(
        "cart",
        "shop",
        {"node-a1": 2, "node-a2": 2, "node-a3": 1},
        cpu="300m",
        memory="1Gi",
        affinity=zone_a_only(),
    )
    pods += replicas(
        "checkout",
        "shop",
        {"node-a1": 1, "node-a4": 1, "node-b2": 2, "node-b3": 1},
        cpu="200m",
        memory="256Mi",
        affinity=one_per_node("checkout"),
        priority_class="shop-critical",
    )
    pods += replicas(
        "api",
        "shop",
        {"node-a1": 2, "node-a2": 2, "node-b1": 1, "node-b2": 1},
        cpu="200m",
        memory="768Mi",
        limits=True,
    )
    pods += replicas("redis", "data", {"node-b1": 3}, cpu="200m", memory="1Gi")
    pods += [
        workload_pod(
            f"postgres-{index}",
            "data",
            node_name,
            app="postgres",
            cpu="1",
            memory="4Gi",
            owner_kind="StatefulSet",
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{index}"}}],
        )
        for index, node_name in enumerate(("node-a3", "node-b2"))
    ]
    pods += replicas(
        "trainer",
        "ml",
        {"node-gpu1": 2},
        cpu="2",
        memory="8Gi",
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        node_selector={"accelerator": "nvidia"},
    )
    pods += replicas(
        "metrics-proxy",
        "monitoring",
        {"node-gpu1": 1},
        cpu="100m",
        memory="128Mi",
    )
    pods += replicas(
        "gateway",
        "edge",
        {"node-edge1": 2},
        cpu="100m",
        memory="128Mi",
        tolerations=[{"key": "dedicated", "value": "edge", "effect": "NoExecute"}],
        node_selector={"role": "edge"},
    )
    pods += replicas(
        "worker",
        "batch",
        {"node-a1": 3, "node-a2": 3, "node-a3": 2, "node-b1": 2, "node-b2": 2, "node-b3": 1},
        cpu="100m",
        memory="256Mi",
    )
    pods += [
        workload_pod(
            f"report-2026110{index}-{uid('report', str(index))[:5]}",
            "batch",
            "node-b3",
            app="report",
            cpu="500m",
            memory="1Gi",
            owner_kind="Job",
            owner_name=f"report-2026110{index}",
            phase="Succeeded",
        )
        for index in range(1, 5)
    ]
    pods.append(
        workload_pod(
            "debug-shell",
            "default",
            "node-a1",
            app="debug",
            cpu="100m",
            memory="128Mi",
            owner_kind=None,
        )
    )
    return pods


def controllers(pods: list[JSON]) -> list[JSON]:
    """The Deployments and ReplicaSets behind the ``replicas`` pods and the StatefulSet behind
    postgres, each with as many replicas as it has pods (the default rollout)."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for pod in pods:
        metadata = pod["metadata"]
        for ref in metadata.get("ownerReferences") or ():
            if ref["kind"] in ("ReplicaSet", "StatefulSet"):
                key = (ref["kind"], metadata["namespace"], ref["name"], metadata["labels"]["app"])
                counts[key] = counts.get(key, 0) + 1
    items: list[JSON] = []
    for (kind, namespace, name, app), count in sorted(counts.items()):
        common: dict[str, Any] = {"namespace": namespace, "created": CREATED, "replicas": count}
        if kind == "ReplicaSet":
            items.append(
                kubeobjects.workload(
                    "Deployment", app, uid=uid("Deployment", namespace, app), **common
                )
            )
            common["owner"] = owner("Deployment", app, namespace)
        items.append(kubeobjects.workload(kind, name, uid=uid(kind, namespace, name), **common))
    return items


def pdb_over(name: str, namespace: str, app: str, min_available: int, pods: list[JSON]) -> JSON:
    """A PDB with the status the disruption controller computes over ``pods``."""
    matching = [
        p
        for p in pods
        if p["metadata"]["namespace"] == namespace and p["metadata"]["labels"].get("app") == app
    ]
    healthy = sum(1 for p in matching if p["status"]["phase"] == "Running")
    allowed = max(0, healthy - min_available) if matching else 0
    return kubeobjects.pdb(
        name,
        namespace=namespace,
        uid=uid("pdb", namespace, name),
        created=CREATED,
        match_labels={"app": app},
        min_available=min_available,
        disruptions_allowed=allowed,
        metadata={"generation": 1},
        status={
            "observedGeneration": 1,
            "currentHealthy": healthy,
            "desiredHealthy": min_available,
            "expectedPods": len(matching),
        },
    )


def snapshot() -> JSON:
    pods = workloads()
    items: list[JSON] = [node(name) for name in NODES]
    items += pods
    items += controllers(pods)
    items += [
        pdb_over("web", "shop", "web", 12, pods),
        pdb_over("postgres", "data", "postgres", 1, pods),
    ]
    items += [
        kubeobjects.namespace(
            name,
            uid=uid("namespace", name),
            created=CREATED,
            labels={"kubernetes.io/metadata.name": name},
            spec={"finalizers": ["kubernetes"]},
            status={"phase": "Active"},
        )
        for name in NAMESPACES
    ]
    items += [
        kubeobjects.priority_class(
            name, value, uid=uid("priorityclass", name), preemption_policy="PreemptLowerPriority"
        )
        for name, value in PRIORITY_CLASSES.items()
    ]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=str(Path(__file__).parents[1] / "examples" / "snapshot.json.gz")
    )
    out = Path(parser.parse_args().out)
    text = json.dumps(snapshot(), indent=1, sort_keys=True) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(text.encode(), mtime=0))


if __name__ == "__main__":
    main()
