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
import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.config.errors import ConfigError
from agent.descheduler.cache.projection import snapshot_from_list
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.policy import DeschedulerPolicy, parse_policy
from agent.descheduler.model.cluster import ClusterSnapshot, NodeUsage
from agent.descheduler.model.metricsusage import KubernetesMetrics, PrometheusSamples
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
    prometheus: Mapping[str, Mapping[str, float] | str] | None = None,
    kubernetes_metrics: KubernetesMetrics | None = None,
) -> ClusterSnapshot:
    """A snapshot of ``items`` at ``NOW``, with these NodeReports, our taint record and the
    usage a metrics source would add: ``prometheus`` maps each query to its ratios by node,
    or to the error its run gave."""
    built = snapshot_from_list(items, NOW)
    samples = {
        query: PrometheusSamples(query, error=answer)
        if isinstance(answer, str)
        else PrometheusSamples(query, ratios=dict(answer))
        for query, answer in (prometheus or {}).items()
    }
    return dataclasses.replace(
        built,
        node_usage=built.node_usage if node_usage is None else node_usage,
        taint_record=built.taint_record if taint_record is None else taint_record,
        prometheus=samples,
        kubernetes_metrics=kubernetes_metrics,
    )


def write_snapshot_file(path: Path, document: Any, *, gzipped: bool = False) -> Path:
    """``document`` (a List, see ``kubeobjects.list_document``) as JSON at ``path``, gzipped if
    asked: a snapshot or NodeReports file as ``descheduler plan`` reads it. Returns ``path``."""
    data = json.dumps(document).encode()
    path.write_bytes(gzip.compress(data) if gzipped else data)
    return path


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


ONLY_ARGS = "profiles[0].pluginConfig[0].args"
"""Where an error of ``policy_errors`` names the plugin's args."""


def policy_errors(plugin: str, args: Mapping[str, Any] | None) -> list[str]:
    """The errors, one string each, of a one-profile policy that enables ``plugin`` at its
    extension points with ``args`` as its only pluginConfig entry (no pluginConfig when
    None); the policy must not parse."""
    points = sorted(point.lower() for point in REGISTRY[plugin].extension_points)
    profile: dict[str, Any] = {"name": "p", "plugins": {p: {"enabled": [plugin]} for p in points}}
    if args is not None:
        profile["pluginConfig"] = [{"name": plugin, "args": dict(args)}]
    raw = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [profile]}
    try:
        parse_policy(raw, "<test>")
    except ConfigError as error:
        return [str(each) for each in error.errors]
    raise AssertionError(f"a policy with {plugin} args {args!r} parsed without error")
