"""Builders for the objects the readiness gate reads: Nodes, DaemonSets, pods, CSINodes.

Shared by the readiness unit and integration tests, so both describe a node the same way.
Every object carries apiVersion/kind, so the fake API server can create it as it is.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from agent.readiness.presets import PRESETS, GateKeys

JSON = dict[str, Any]
KEYS: GateKeys = PRESETS["default"]
GATE = KEYS.taint
CRITICAL = {KEYS.label: "true"}


def taint(key: str = GATE, effect: str = "NoSchedule", value: str | None = None) -> JSON:
    out: JSON = {"key": key, "effect": effect}
    if value is not None:
        out["value"] = value
    return out


def node(
    name: str = "node-1",
    *,
    labels: dict[str, str] | None = None,
    taints: Iterable[JSON] = (taint(),),
    annotations: dict[str, str] | None = None,
    resource_version: str = "1",
    created: str = "2025-01-01T00:00:00Z",
) -> JSON:
    metadata: JSON = {
        "name": name,
        "uid": f"uid-{name}",
        "resourceVersion": resource_version,
        "creationTimestamp": created,
        "labels": {"kubernetes.io/hostname": name, **(labels or {})},
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    spec: JSON = {}
    taint_list = list(taints)
    if taint_list:
        spec["taints"] = taint_list
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec}


def daemon_set(
    name: str,
    *,
    namespace: str = "kube-system",
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: Iterable[JSON] = ({"operator": "Exists"},),
    affinity: JSON | None = None,
    host_network: bool = False,
    node_name: str | None = None,
) -> JSON:
    """A critical DaemonSet that, by default, tolerates everything (like most CNI plugins)."""
    spec: JSON = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    toleration_list = list(tolerations)
    if toleration_list:
        spec["tolerations"] = toleration_list
    if affinity is not None:
        spec["affinity"] = affinity
    if host_network:
        spec["hostNetwork"] = True
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-ds-{name}",
            "labels": dict(CRITICAL if labels is None else labels),
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "kube-system",
    node_name: str = "node-1",
    owner: JSON | None = None,
    labels: dict[str, str] | None = None,
    ready: bool | None = True,
    phase: str = "Running",
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
) -> JSON:
    """A pod on ``node_name``; ``owner`` (a DaemonSet) makes it that DaemonSet's daemon pod."""
    metadata: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-pod-{name}-{uuid.uuid4().hex[:6]}",
        "labels": dict(CRITICAL if labels is None else labels),
    }
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if annotations:
        metadata["annotations"] = dict(annotations)
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    status: JSON = {"phase": phase}
    if ready is not None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True"},
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                **({} if ready else {"reason": "ContainersNotReady"}),
            },
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
        "status": status,
    }


def csinode(node_name: str = "node-1", drivers: Iterable[str] = ()) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node_name},
        "spec": {"drivers": [{"name": d, "nodeID": node_name} for d in drivers]},
    }
