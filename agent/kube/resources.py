"""The resource types the product uses, and how their URLs are built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        if subresource:
            base += f"/{subresource}"
        return base


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = str(metadata.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
REPLICATION_CONTROLLERS = Resource(
    "", "v1", "replicationcontrollers", "ReplicationController", namespaced=True
)
CSI_NODES = Resource("storage.k8s.io", "v1", "csinodes", "CSINode", namespaced=False)
POD_DISRUPTION_BUDGETS = Resource(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", namespaced=True
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
PERSISTENT_VOLUME_CLAIMS = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True
)
NODE_REPORTS = Resource(
    "kubelet-companion.io", "v1alpha1", "nodereports", "NodeReport", namespaced=False
)
"""Our CRD (``daemonset/base/nodereport-crd.yaml``): one cluster-scoped object per node."""
SECRETS = Resource("", "v1", "secrets", "Secret", namespaced=True)
NODE_METRICS = Resource("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", namespaced=False)
"""metrics.k8s.io (metrics-server): get and list only, no watch."""
POD_METRICS = Resource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", namespaced=True)
