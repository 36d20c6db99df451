"""The descheduler tests' cluster: their defaults for the shared builders, and snapshots and
policies built from them.

Objects are the API JSON of ``tests.harness.kubeobjects`` and go through the product's own
projection, so a test pins the same path a watch takes. Defaults, stated once here: a Ready
node with 4 CPUs, 16 GiB and 110 pods, uid ``uid-<name>``; a Running, Ready pod owned by
ReplicaSet ``rs``, image ``app:1`` with 100m and 256 MiB requested, priority 0, created and
started at ``CREATED``, uid ``uid-<namespace>-<name>``; a PDB allowing no disruption.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from agent.descheduler.cache.projection import snapshot_from_list
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.policy import DeschedulerPolicy, parse_policy
from agent.descheduler.model.cluster import ClusterSnapshot, NodeUsage
from agent.descheduler.model.taintrecord import TaintRecord
from tests.harness import kubeobjects
from tests.harness.kubeobjects import owner_ref

NOW = 1_800_000_000.0
CREATED = "2026-01-01T00:00:00Z"

POD_DEFAULTS: Mapping[str, Any] = {
    "owner": owner_ref("ReplicaSet", "rs"),
    "image": "app:1",
    "cpu": "100m",
    "memory": "256Mi",
    "priority": 0,
    "phase": "Running",
    "ready": True,
    "created": CREATED,
    "start_time": CREATED,
}
NODE_DEFAULTS: Mapping[str, Any] = {"cpu": "4", "memory": "16Gi", "pods": "110", "ready": True}


def pod(
    name: str, node: str | None, *, namespace: str = "default", **fields: Any
) -> dict[str, Any]:
    """``kubeobjects.pod`` with ``POD_DEFAULTS``; ``fields`` override them."""
    uid = f"uid-{namespace}-{name}"
    return kubeobjects.pod(
        name, node, namespace=namespace, **{"uid": uid, **POD_DEFAULTS, **fields}
    )


def node(name: str, **fields: Any) -> dict[str, Any]:
    """``kubeobjects.node`` with ``NODE_DEFAULTS``; ``fields`` override them."""
    return kubeobjects.node(name, **{"uid": f"uid-{name}", **NODE_DEFAULTS, **fields})


pdb = functools.partial(kubeobjects.pdb, disruptions_allowed=0)


def snapshot(
    *items: Mapping[str, Any],
    node_usage: Mapping[str, NodeUsage] | None = None,
    taint_record: TaintRecord | None = None,
) -> ClusterSnapshot:
    """A snapshot of ``items`` at ``NOW``, with these NodeReports and our taint record."""
    built = snapshot_from_list(items, NOW)
    if node_usage is not None:
        built = dataclasses.replace(built, node_usage=node_usage)
    if taint_record is not None:
        built = dataclasses.replace(built, taint_record=taint_record)
    return built


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
