"""Builders for the manifests tests create most often (pods, nodes, PDBs, CRDs).

Keeps tests short and their intent visible: a test says "a pod on node-a labelled app=web"
instead of spelling out thirty lines of JSON. The output is plain JSON dicts usable with the
official client (as request bodies) and with the in-process API alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

JSON = dict[str, Any]


def pod(
    name: str,
    namespace: str = "default",
    *,
    node: str | None = None,
    labels: Mapping[str, str] | None = None,
    containers: Iterable[str] = ("app",),
    image: str = "registry.example/app:1.0",
    priority_class: str | None = None,
    grace_seconds: int | None = None,
    finalizers: Iterable[str] = (),
) -> JSON:
    """A minimal pod manifest."""
    spec: JSON = {"containers": [{"name": c, "image": image} for c in containers]}
    if node is not None:
        spec["nodeName"] = node
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if grace_seconds is not None:
        spec["terminationGracePeriodSeconds"] = grace_seconds
    metadata: JSON = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def node(
    name: str, *, labels: Mapping[str, str] | None = None, taints: Iterable[JSON] = ()
) -> JSON:
    """A Ready node manifest (status included: keep it with the in-process `create`)."""
    spec: JSON = {}
    if taints:
        spec["taints"] = list(taints)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }


def pdb(
    name: str,
    namespace: str = "default",
    *,
    match_labels: Mapping[str, str] | None = None,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_pod_eviction_policy: str | None = None,
) -> JSON:
    """A policy/v1 PodDisruptionBudget manifest."""
    spec: JSON = {"selector": {"matchLabels": dict(match_labels or {})}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def crd(
    group: str,
    kind: str,
    plural: str,
    *,
    scope: str = "Namespaced",
    versions: Iterable[str] = ("v1",),
    status_subresource: bool = True,
) -> JSON:
    """A CustomResourceDefinition manifest (first version is the storage version)."""
    version_list: list[JSON] = []
    for index, version in enumerate(versions):
        entry: JSON = {
            "name": version,
            "served": True,
            "storage": index == 0,
            "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
        if status_subresource:
            entry["subresources"] = {"status": {}}
        version_list.append(entry)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": version_list,
        },
    }
