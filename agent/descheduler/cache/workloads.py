"""API JSON -> ``WorkloadInfo``: Deployments, ReplicaSets, StatefulSets and
ReplicationControllers, as far as their rollout settings go.

Implicit budgets (``core.rules.rollouts``) need each pod's workload: how many replicas it
wants and how many its rolling update takes down at once. Only that is kept: name, UID,
``spec.replicas``, the strategy's type with its ``maxUnavailable`` (and a Deployment's
``maxSurge``), and a ReplicaSet's controlling Deployment. Its own module beside
``projection``, which holds the pods' and nodes' projections: one concern each.

Input is checked as the API server would have: ``replicas`` a non-negative integer,
``maxUnavailable``/``maxSurge`` a non-negative integer or a percentage (``"25%"``, at most
``100%`` for ``maxUnavailable``); anything else is a ``ProjectionError`` naming the field (a
skipped object live, exit 2 offline).

Pure: dicts in, frozen model objects out.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from agent.descheduler.cache.projection import ProjectionError, owner_refs
from agent.descheduler.model.cluster import WorkloadInfo
from agent.kubesemantics.wellknown import DEPLOYMENT_KIND, STATEFUL_SET_KIND

JsonObject = Mapping[str, Any]

PERCENT = re.compile(r"[0-9]+%")
"""The API server's ``IsValidPercent``."""
STRATEGY_KEYS = {
    DEPLOYMENT_KIND: "strategy",
    STATEFUL_SET_KIND: "updateStrategy",
}
"""Where each kind keeps its rollout's settings; a ReplicaSet or ReplicationController has
none."""


def _section(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ProjectionError(path, "not an object")
    return value


def _replicas(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    if value is None:
        return 1  # the API server's default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProjectionError("spec.replicas", f"not a replica count: {value!r:.60}")
    return value


def int_or_percent(value: Any, path: str, *, at_most_whole: bool = False) -> int | str | None:
    """A rollout's ``IntOrString`` as the API server validates it; ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and PERCENT.fullmatch(value):
        if at_most_whole and int(value[:-1]) > 100:
            raise ProjectionError(path, f"must not be greater than 100%: {value!r:.60}")
        return sys.intern(value)
    raise ProjectionError(path, f"not a count or a percentage: {value!r:.60}")


def project_workload(obj: JsonObject, kind: str) -> WorkloadInfo:
    """A workload of ``kind`` (one of ``WORKLOAD_KINDS``) as implicit budgets read it."""
    metadata = _section(obj, "metadata", "metadata")
    spec = _section(obj, "spec", "spec")
    strategy_key = STRATEGY_KEYS.get(kind)
    strategy: Mapping[str, Any] = {}
    rolling: Mapping[str, Any] = {}
    if strategy_key is not None:
        strategy = _section(spec, strategy_key, f"spec.{strategy_key}")
        rolling = _section(strategy, "rollingUpdate", f"spec.{strategy_key}.rollingUpdate")
    where = f"spec.{strategy_key}.rollingUpdate"
    controller = next((owner for owner in owner_refs(metadata) if owner.controller), None)
    return WorkloadInfo(
        kind=kind,
        namespace=sys.intern(str(metadata.get("namespace") or "")),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        replicas=_replicas(spec),
        strategy=sys.intern(str(strategy.get("type") or "")),
        max_unavailable=int_or_percent(
            rolling.get("maxUnavailable"), f"{where}.maxUnavailable", at_most_whole=True
        ),
        max_surge=int_or_percent(rolling.get("maxSurge"), f"{where}.maxSurge")
        if kind == DEPLOYMENT_KIND
        else None,
        controller=controller,
    )
