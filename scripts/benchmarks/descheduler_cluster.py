"""Synthetic clusters shaped like the descheduler's parity fixture, as an API server sends them.

The parity fixture (tests/fixtures/descheduler/cluster-1k.json.gz) holds 1,000 nodes of
16 CPU / 64 GiB / 110 pods, about 30 pods per node owned by ReplicaSets, skewed into hot,
medium and cold nodes, 20 namespaces and a PDB per two ReplicaSets. Its objects are
trimmed; a real API server adds uid, resourceVersion, managedFields, default tolerations,
container defaults and a status, which is what a cache decodes. These generators add them,
so decoding figures are honest. Items of a List carry no apiVersion or kind: ``_item`` drops
the ones the shared builders (``tests.harness.kubeobjects``) give every object.
"""

from __future__ import annotations

import json
import random
from typing import Any

from tests.harness import kubeobjects
from tests.harness.kubeobjects import (
    DEFAULT_TOLERATIONS,
    condition,
    container,
    container_status,
    owner_ref,
)

NAMESPACES = 20
PODS_PER_NODE = 30
REPLICAS = 6


def _uid(kind: str, index: int) -> str:
    return f"{kind[:8]:0<8}-0000-4000-8000-{index:012d}"


def _managed_fields(manager: str) -> list[dict[str, Any]]:
    return [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-22T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:ownerReferences": {}},
                "f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}}}},
            },
        }
    ]


def _item(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as an item of a List response, which names neither apiVersion nor kind."""
    return {k: v for k, v in obj.items() if k not in {"apiVersion", "kind"}}


def node(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return _item(
        kubeobjects.node(
            name,
            uid=_uid("node", index),
            resource_version=str(100 + index),
            created="2026-11-22T00:00:00Z",
            labels={
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{'abc'[index % 3]}",
            },
            annotations={"node.alpha.kubernetes.io/ttl": "0"},
            **capacity,
            images={f"registry.invalid/app-{i}:1": 10_000_000 + i for i in range(8)},
            metadata={"managedFields": _managed_fields("kubelet")},
            spec={"podCIDR": f"10.{index // 256}.{index % 256}.0/24"},
            status={
                "capacity": capacity,
                "conditions": [
                    condition(
                        kind,
                        kind == "Ready",
                        reason="KubeletReady" if kind == "Ready" else "KubeletHasSufficient",
                        message="kubelet is posting ready status",
                        lastHeartbeatTime="2026-11-22T00:00:00Z",
                        lastTransitionTime="2026-11-22T00:00:00Z",
                    )
                    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
                ],
                "nodeInfo": {
                    "kubeletVersion": "v1.37.0",
                    "containerRuntimeVersion": "containerd://2.0.0",
                    "osImage": "Debian GNU/Linux 13",
                    "kernelVersion": "6.12.0",
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                },
            },
        )
    )


def pod(index: int, node_name: str, replica_set: int, namespace: str) -> dict[str, Any]:
    rs = f"rs-{replica_set:06d}"
    high = replica_set % 5 == 0
    app = container(
        "app",
        "registry.invalid/app:1",
        cpu=("100m", "250m", "500m", "1")[replica_set % 4],
        memory=("256Mi", "512Mi", "1Gi", "2Gi")[replica_set % 4],
        fields={
            "env": [{"name": "MODE", "value": "production"}],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "volumeMounts": [
                {
                    "name": "kube-api-access",
                    "readOnly": True,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                }
            ],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        },
    )
    return _item(
        kubeobjects.pod(
            f"{rs}-{index:07d}",
            node_name,
            namespace=namespace,
            uid=_uid("pod", index),
            created="2026-11-22T00:00:00Z",
            labels={"app": rs, "pod-template-hash": f"{replica_set:08x}"},
            owner=owner_ref(
                "ReplicaSet", rs, uid=_uid("rs", replica_set), block_owner_deletion=True
            ),
            containers=[app],
            priority=10000 if high else 0,
            priority_class="web-high" if high else "",
            grace_seconds=30,
            volumes=[
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [{"serviceAccountToken": {"path": "token"}}],
                    },
                }
            ],
            tolerations=DEFAULT_TOLERATIONS,
            phase="Running",
            conditions=[
                condition(kind, lastTransitionTime="2026-11-22T00:00:02Z")
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            container_statuses=[
                container_status(
                    "app",
                    container_id=f"containerd://{index:064x}",
                    fields={
                        "restartCount": 0,
                        "started": True,
                        "image": "registry.invalid/app:1",
                        "imageID": "registry.invalid/app@sha256:" + "0" * 64,
                        "state": {"running": {"startedAt": "2026-11-22T00:00:02Z"}},
                        "lastState": {},
                    },
                )
            ],
            start_time="2026-11-22T00:00:01Z",
            metadata={
                "resourceVersion": str(10_000 + index),
                "managedFields": _managed_fields("kube-controller-manager"),
            },
            spec={
                "restartPolicy": "Always",
                "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "enableServiceLinks": True,
                "preemptionPolicy": "PreemptLowerPriority",
            },
            status={
                "qosClass": "Burstable",
                "hostIP": "10.0.0.1",
                "podIP": f"10.1.{index // 256 % 256}.{index % 256}",
            },
        )
    )


def cluster(nodes: int, *, seed: int = 1) -> dict[str, list[dict[str, Any]]]:
    """Objects by kind: ``nodes`` nodes, 30 pods each on average, skewed hot/medium/cold."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible layout, not a secret
    node_objects = [node(i) for i in range(nodes)]
    pods: list[dict[str, Any]] = []
    total = nodes * PODS_PER_NODE
    replica_sets = total // REPLICAS
    # Skew: a third of the nodes get twice the average, a third half, the rest the average.
    weights = [(2.0, 1.0, 0.5)[i % 3] for i in range(nodes)]
    names = [n["metadata"]["name"] for n in node_objects]
    for rs in range(replica_sets):
        namespace = f"team-{rs % NAMESPACES}"
        # Several pods of one ReplicaSet often share a node (duplicates to remove).
        homes = rng.choices(names, weights=weights, k=REPLICAS // 2)
        for replica in range(REPLICAS):
            index = rs * REPLICAS + replica
            pods.append(pod(index, homes[replica % len(homes)], rs, namespace))
    namespaces = [
        _item(kubeobjects.namespace(f"team-{i}", uid=_uid("ns", i), labels={"team": str(i)}))
        for i in range(NAMESPACES)
    ]
    budgets = [
        _item(
            kubeobjects.pdb(
                f"pdb-{rs:06d}",
                namespace=f"team-{rs % NAMESPACES}",
                match_labels={"app": f"rs-{rs:06d}"},
                max_unavailable=1,
                disruptions_allowed=1,
                status={"currentHealthy": 6, "desiredHealthy": 5},
            )
        )
        for rs in range(0, replica_sets, 2 * max(1, replica_sets // 1000))
    ]
    priority_classes = [
        _item(kubeobjects.priority_class("web-high", 10000)),
        _item(kubeobjects.priority_class("web-low", 100)),
    ]
    return {
        "Node": node_objects,
        "Pod": pods,
        "Namespace": namespaces,
        "PodDisruptionBudget": budgets,
        "PriorityClass": priority_classes,
    }


def list_bytes(kind: str, items: list[dict[str, Any]]) -> bytes:
    """The body of ``GET .../<kind>s?resourceVersion=0``: one page, every item."""
    return json.dumps(
        {
            "kind": f"{kind}List",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "123456"},
            "items": items,
        },
        separators=(",", ":"),
    ).encode()
