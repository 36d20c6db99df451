"""Write the sample cluster snapshot that ``descheduler plan`` is shown on (docs/plan.md).

    .venv/bin/python scripts/sample_snapshot.py [--out examples/snapshot.json.gz]

Deterministic: the same bytes every run (fixed names, UIDs derived from names, fixed times,
gzip without a timestamp), so the committed file only changes when this script does. The
output has the shape ``kubectl get nodes,pods,pdb,namespaces,priorityclasses -A -o json``
prints, with the fields the API server fills in (priority from the class, QoS class, the
default not-ready/unreachable tolerations, PDB status as the disruption controller computes
it), so the same objects can be loaded into an API server unchanged.

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

DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]


def uid(*parts: str) -> str:
    return str(uuid.uuid5(NAMESPACE_UUID, "/".join(parts)))


def node(name: str) -> JSON:
    zone, cpu, memory, taints, labels, unschedulable = NODES[name]
    resources = {"cpu": cpu, "memory": f"{memory}Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    spec: JSON = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
        spec["taints"] = [
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            *taints,
        ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid("node", name),
            "creationTimestamp": CREATED,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone,
                **labels,
            },
        },
        "spec": spec,
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": CREATED,
                    "lastTransitionTime": CREATED,
                }
            ],
        },
    }


def owner(kind: str, name: str, namespace: str) -> JSON:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "name": name,
        "uid": uid(kind, namespace, name),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod(
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
    resources: JSON = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    spec: JSON = {
        "nodeName": node_name,
        "containers": [
            {"name": app, "image": f"registry.example/{app}:1.0", "resources": resources}
        ],
        "restartPolicy": "Never" if owner_kind == "Job" else "Always",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [*(tolerations or []), *DEFAULT_TOLERATIONS],
        "priority": PRIORITY_CLASSES.get(priority_class or "", 0),
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if volumes:
        spec["volumes"] = volumes
    metadata: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": uid("pod", namespace, name),
        "creationTimestamp": CREATED,
        "labels": {"app": app},
    }
    if owner_kind is not None:
        metadata["ownerReferences"] = [owner(owner_kind, owner_name or app, namespace)]
    running = phase == "Running"
    conditions = [
        {"type": kind, "status": "True" if running or kind == "PodScheduled" else "False"}
        for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": conditions,
            "qosClass": "Guaranteed" if limits else "Burstable",
            "startTime": STARTED,
            "containerStatuses": [
                {
                    "name": app,
                    "image": f"registry.example/{app}:1.0",
                    "ready": running,
                    "restartCount": 0,
                    "started": running,
                    "state": {"running": {"startedAt": STARTED}}
                    if running
                    else {"terminated": {"exitCode": 0, "reason": "Completed"}},
                }
            ],
        },
    }


def replicas(app: str, namespace: str, layout: dict[str, int], **kwargs: Any) -> list[JSON]:
    """``layout``: node -> how many pods of ``app`` run there (ReplicaSet ``<app>-<hash>``)."""
    owner_name = f"{app}-{uid(app)[:10].replace('-', '')}"
    pods = []
    index = 0
    for node_name, count in layout.items():
        for _ in range(count):
            suffix = uid(app, str(index)).replace("-", "")[:5]
            pods.append(
                pod(
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


def daemon_set(app: str, namespace: str, cpu: str, memory: str, priority: str | None) -> list[JSON]:
    return [
        pod(
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
    pods += daemon_set("kube-proxy", "kube-system", "100m", "128Mi", "system-node-critical")
    pods += daemon_set("node-exporter", "monitoring", "50m", "64Mi", None)
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
        pod(
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
        pod(
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
        pod(
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


def pdb(name: str, namespace: str, app: str, min_available: int, pods: list[JSON]) -> JSON:
    """A PDB with the status the disruption controller computes over ``pods``."""
    matching = [
        p
        for p in pods
        if p["metadata"]["namespace"] == namespace and p["metadata"]["labels"].get("app") == app
    ]
    healthy = sum(1 for p in matching if p["status"]["phase"] == "Running")
    allowed = max(0, healthy - min_available) if matching else 0
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid("pdb", namespace, name),
            "creationTimestamp": CREATED,
            "generation": 1,
        },
        "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": min_available},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": min_available,
            "expectedPods": len(matching),
        },
    }


def snapshot() -> JSON:
    pods = workloads()
    items: list[JSON] = [node(name) for name in NODES]
    items += pods
    items += [pdb("web", "shop", "web", 12, pods), pdb("postgres", "data", "postgres", 1, pods)]
    items += [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "uid": uid("namespace", name),
                "creationTimestamp": CREATED,
                "labels": {"kubernetes.io/metadata.name": name},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        for name in NAMESPACES
    ]
    items += [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "uid": uid("priorityclass", name)},
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
        }
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
