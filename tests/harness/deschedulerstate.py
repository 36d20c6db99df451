"""Small builders of cluster objects for descheduler tests, as the API server would store them.

Objects are built as API JSON and go through the product's own projection, so a test pins
the same path a watch takes. Defaults: a Ready node with 4 CPUs, 16 GiB and 110 pods; a
Running, Ready pod owned by ReplicaSet ``rs`` with 100m and 256 MiB requested.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent.descheduler.cache.projection import snapshot_from_list
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.policy import DeschedulerPolicy, parse_policy
from agent.descheduler.model.cluster import ClusterSnapshot, NodeUsage

NOW = 1_800_000_000.0


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    ready: bool = True,
    images: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A Node; ``images`` are its ``status.images`` (name -> size in bytes)."""
    status: dict[str, Any] = {
        "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if images:
        status["images"] = [{"names": [n], "sizeBytes": size} for n, size in images.items()]
    return {
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": dict(labels or {})},
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": status,
    }


def pod(
    name: str,
    node_name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = "256Mi",
    limits: Mapping[str, str] | None = None,
    owner: tuple[str, str] | None = ("ReplicaSet", "rs"),
    owner_uid: str | None = None,
    priority: int | None = 0,
    phase: str = "Running",
    ready: bool = True,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    volumes: Iterable[Mapping[str, Any]] = (),
    tolerations: Iterable[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    images: Iterable[str] = ("app:1",),
    start_time: str | None = "2026-01-01T00:00:00Z",
    deleting: bool = False,
    extra_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = dict(limits)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    if owner is not None:
        kind, owner_name = owner
        metadata["ownerReferences"] = [
            {
                "kind": kind,
                "name": owner_name,
                "uid": owner_uid or f"uid-{kind}-{owner_name}",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {
        "nodeName": node_name,
        "containers": [
            {"name": f"c{i}", "image": image, "resources": resources}
            for i, image in enumerate(images)
        ],
        "volumes": list(volumes),
        "tolerations": list(tolerations),
        "nodeSelector": dict(node_selector or {}),
        **dict(extra_spec or {}),
    }
    if priority is not None:
        spec["priority"] = priority
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if start_time:
        status["startTime"] = start_time
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def pdb(
    name: str,
    *,
    namespace: str = "default",
    match_labels: Mapping[str, str] | None = None,
    disruptions_allowed: int = 0,
    unhealthy_policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels or {})}}
    if unhealthy_policy:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_policy
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"disruptionsAllowed": disruptions_allowed},
    }


def snapshot(
    *items: Mapping[str, Any], node_usage: Mapping[str, NodeUsage] | None = None
) -> ClusterSnapshot:
    built = snapshot_from_list(items, NOW)
    if node_usage is None:
        return built
    return ClusterSnapshot(
        nodes=built.nodes,
        pods_by_node=built.pods_by_node,
        namespaces=built.namespaces,
        disruption_budgets=built.disruption_budgets,
        claims=built.claims,
        priority_classes=built.priority_classes,
        node_usage=node_usage,
        now=built.now,
    )


def policy(
    *plugins: tuple[str, Mapping[str, Any] | None],
    evictor_args: Mapping[str, Any] | None = None,
    **top: Any,
) -> DeschedulerPolicy:
    """One profile ``p`` with the given (plugin, args) enabled at their extension point."""
    config: list[dict[str, Any]] = [{"name": "DefaultEvictor", "args": dict(evictor_args or {})}]
    points: dict[str, list[str]] = {}
    for name, args in plugins:
        config.append({"name": name, "args": dict(args or {})})
        for point in REGISTRY[name].extension_points:
            points.setdefault(point.lower(), []).append(name)
    raw = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [
            {
                "name": "p",
                "pluginConfig": config,
                "plugins": {point: {"enabled": names} for point, names in points.items()},
            }
        ],
        **top,
    }
    return parse_policy(raw, "<test>")
