"""Sharing equal sub-values between cached objects, to keep the caches small.

The pods of one ReplicaSet carry the same labels, tolerations, owner, requests and images;
150,000 pods hold a few thousand distinct values of each. Each projected pod's sub-values
are swapped for one canonical copy, so equal values are stored once. The projections are
immutable, so sharing is safe.

The table of canonical values only grows between resets: past ``limit`` entries it starts
over (objects keep the copies they have; new ones share again), so label churn from
rollouts cannot make it grow without bound.

Concurrency: one ``Sharing`` per cache, used only by that cache's watch thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from typing import Any, TypeVar

import msgspec

from agent.descheduler.model.cluster import NodeInfo, PodInfo, WorkloadInfo

T = TypeVar("T")


def _map_key(value: Mapping[str, Any]) -> Hashable:
    return frozenset(value.items())


def _maps_key(values: tuple[Mapping[str, Any], ...]) -> Hashable:
    return tuple(frozenset((k, _frozen(v)) for k, v in value.items()) for value in values)


def _frozen(value: Any) -> Hashable:
    if isinstance(value, Mapping):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value  # type: ignore[no-any-return]  # JSON scalars are hashable


class Sharing:
    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._canonical: dict[Hashable, Any] = {}

    def shared(self, key: Hashable, value: T) -> T:
        found = self._canonical.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]  # stored under the same key: same type
        if len(self._canonical) >= self.limit:
            self._canonical.clear()
        self._canonical[key] = value
        return value

    def _map(self, tag: str, value: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.shared((tag, _map_key(value)), value) if value else value

    def pod(self, pod: PodInfo) -> PodInfo:
        """The same pod, its sub-values swapped for shared equal copies."""
        changes: dict[str, Any] = {}
        for name, tag in (
            ("labels", "l"),
            ("annotations", "a"),
            ("node_selector", "s"),
        ):
            value = getattr(pod, name)
            if value:
                shared = self._map(tag, value)
                if shared is not value:
                    changes[name] = shared
        for name, key in (
            ("requests", ("r", _map_key(pod.requests))),
            ("owners", ("o", pod.owners)),
            ("images", ("i", pod.images)),
            ("tolerations", ("t", _maps_key(pod.tolerations))),
        ):
            value = getattr(pod, name)
            if value:
                shared = self.shared(key, value)
                if shared is not value:
                    changes[name] = shared
        if pod.extra:
            # Rarer fields (the pod-state plugins' status among them) are equal across the
            # pods of one owner too; values that are not JSON-like or frozen stay unshared.
            try:
                key = ("x", frozenset((k, _frozen(v)) for k, v in pod.extra.items()))
                extra = self.shared(key, pod.extra)
            except TypeError:
                extra = pod.extra
            if extra is not pod.extra:
                changes["extra"] = extra
        return msgspec.structs.replace(pod, **changes) if changes else pod

    def node(self, node: NodeInfo) -> NodeInfo:
        changes: dict[str, Any] = {}
        allocatable = self.shared(("r", _map_key(node.allocatable)), node.allocatable)
        if allocatable is not node.allocatable:
            changes["allocatable"] = allocatable
        if node.taints:
            taints = self.shared(("t", _maps_key(node.taints)), node.taints)
            if taints is not node.taints:
                changes["taints"] = taints
        return dataclasses.replace(node, **changes) if changes else node

    def labels(self, value: Mapping[str, str]) -> Mapping[str, str]:
        return self._map("l", value)

    def workload(self, workload: WorkloadInfo) -> WorkloadInfo:
        """The same workload, its controller reference shared: a Deployment keeps ten
        ReplicaSets of history, each naming it."""
        controller = workload.controller
        if controller is None:
            return workload
        shared = self.shared(("c", controller), controller)
        if shared is controller:
            return workload
        return msgspec.structs.replace(workload, controller=shared)
