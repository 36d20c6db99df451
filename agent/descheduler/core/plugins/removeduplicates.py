"""RemoveDuplicates (Balance): spread the pods of one owner that run the same images, so no
node holds more than its share (upstream ``removeduplicates.go``).

Per node, the pods that pass the evictor's filter and preEvictionFilter and the
``namespaces`` args are keyed by namespace, every owner reference (kind and name) and the
sorted container images; the second and later pods of a key on a node are its duplicates.
For each owner key, the feasible nodes are those at least one distinct placement of its pods
(tolerations, nodeSelector, required node affinity) could use, counted only when there are
two or more of them; with fewer than two feasible nodes nothing moves. Each node keeps
``ceil(count / feasibleNodes)`` pods of the key, where ``count`` is every pod of the key on
every node, and the rest are evicted.

Where we differ on purpose: upstream walks Go maps, so which owner and node come first is
random (it matters only when a limit cuts the run short); we go by owner key, then node name.
``cooldownSeconds`` (ours, off by default) skips pods whose owner lost a pod to us recently.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from agent.config.schema import setting
from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.core.framework.args import Namespaces
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.tolerations import untolerated
from agent.kubesemantics.wellknown import FINISHED_PHASES

OwnerKey = tuple[str, str, str, str]
"""namespace, owner kind, owner name, images joined by ``#``."""


@dataclass(frozen=True)
class RemoveDuplicatesArgs:
    exclude_owner_kinds: tuple[str, ...] = setting(factory=tuple)
    namespaces: Namespaces | None = setting(None)
    cooldown_seconds: float = setting(0.0, minimum=0)


def _by_name(pod: PodInfo) -> tuple[str, str]:
    return pod.namespace, pod.name


def _required_terms(pod: PodInfo) -> Any:
    return ((pod.affinity or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )


Placement = tuple[str, str, str]


def _placement(pod: PodInfo) -> Placement:
    """What decides where a pod may go; pods with equal placements have equal feasible nodes."""
    return (
        repr(pod.tolerations),
        repr(_required_terms(pod)),
        repr(sorted(pod.node_selector.items())),
    )


def _feasible(pod: PodInfo, node: NodeInfo) -> bool:
    if untolerated(node.taints, list(pod.tolerations)):
        return False
    if node_selector_mismatch(pod.node_selector, node.labels):
        return False
    return (
        required_affinity_mismatch({"affinity": pod.affinity or {}}, node.labels, node.name) is None
    )


class RemoveDuplicates:
    name = "RemoveDuplicates"

    def __init__(self, args: RemoveDuplicatesArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        # Owners mostly share a few placements (often none at all): compute each once.
        self._feasible_by_placement: dict[Placement, frozenset[str]] = {}
        # And each placement's text once per distinct trio of objects: the caches share
        # equal values (``cache.sharing``), so most pods hold the very same objects. The
        # entry keeps the pod, so the three objects live as long as it: their ids cannot be
        # taken by others meanwhile.
        self._placement_by_ids: dict[tuple[int, int, int], tuple[PodInfo, Placement]] = {}

    def _admits(self, pod: PodInfo) -> bool:
        if self.args.namespaces is not None and not self.args.namespaces.admits(pod.namespace):
            return False
        evictor = self.handle.evictor
        return evictor.filter(pod) and evictor.pre_eviction_filter(pod)

    def duplicates(
        self, nodes: Sequence[NodeInfo]
    ) -> tuple[dict[OwnerKey, dict[str, list[PodInfo]]], dict[OwnerKey, int]]:
        """Per owner key: the duplicates on each node, and how many pods it has in all."""
        duplicates: dict[OwnerKey, dict[str, list[PodInfo]]] = defaultdict(dict)
        occurrences: dict[OwnerKey, int] = defaultdict(int)
        excluded = set(self.args.exclude_owner_kinds)
        pods_on = self.handle.snapshot.pods_on
        for node in nodes:
            seen: set[tuple[object, ...]] = set()
            pods = sorted(
                (p for p in pods_on(node.name) if p.phase not in FINISHED_PHASES),
                key=_by_name,
            )
            for pod in pods:
                owners = pod.owners
                if (
                    not owners
                    or (excluded and any(o.kind in excluded for o in owners))
                    or not self._admits(pod)
                ):
                    continue
                images = "#".join(pod.images)
                keys = [(pod.namespace, o.kind, o.name, images) for o in owners]
                for key in keys:
                    occurrences[key] += 1
                # Upstream compares the sorted "namespace/kind/name/image" strings of every
                # owner and image; the same owners and the same sorted images give the same.
                if len(owners) == 1:
                    container_keys: tuple[object, ...] = (
                        pod.namespace,
                        (owners[0].kind, owners[0].name),
                        pod.images,
                    )
                else:
                    container_keys = (
                        pod.namespace,
                        *sorted({(o.kind, o.name) for o in owners}),
                        pod.images,
                    )
                if container_keys in seen:
                    for key in keys:
                        duplicates[key].setdefault(node.name, []).append(pod)
                else:
                    seen.add(container_keys)
        return duplicates, occurrences

    def _placement_of(self, pod: PodInfo) -> Placement:
        ids = (id(pod.tolerations), id(pod.affinity), id(pod.node_selector))
        known = self._placement_by_ids.get(ids)
        if known is not None:
            return known[1]
        placement = _placement(pod)
        self._placement_by_ids[ids] = (pod, placement)
        return placement

    def feasible_nodes(
        self, by_node: Mapping[str, list[PodInfo]], nodes: Sequence[NodeInfo]
    ) -> AbstractSet[str]:
        """``getTargetNodes``: nodes some distinct placement fits, if it fits two or more."""
        distinct: dict[Placement, PodInfo] = {}
        for node_name in sorted(by_node):
            for pod in by_node[node_name]:
                distinct.setdefault(self._placement_of(pod), pod)
        counted: list[frozenset[str]] = []
        for placement, pod in distinct.items():
            matching = self._feasible_by_placement.get(placement)
            if matching is None:
                matching = frozenset(node.name for node in nodes if _feasible(pod, node))
                self._feasible_by_placement[placement] = matching
            if len(matching) > 1:
                counted.append(matching)
        if len(counted) == 1:
            # The common case (one placement per owner). Not copied: a copy per owner key
            # costs owners x nodes, quadratic in the cluster's size.
            return counted[0]
        return frozenset().union(*counted)

    def balance(self, nodes: Sequence[NodeInfo]) -> None:
        duplicates, occurrences = self.duplicates(nodes)
        evictor = self.handle.evictor
        for key in sorted(duplicates):
            by_node = duplicates[key]
            targets = self.feasible_nodes(by_node, nodes)
            if len(targets) < 2:
                continue
            upper = math.ceil(occurrences[key] / len(targets))
            for node_name in sorted(by_node):
                pods = by_node[node_name]
                if len(pods) + 1 <= upper:
                    continue
                for pod in pods[upper - 1 :]:
                    if not evictor.filter(pod):
                        # A pod with several owners sits in several keys: evicted already
                        # (upstream would ask the API twice and count it twice).
                        continue
                    if self.args.cooldown_seconds > 0 and evictor.in_cooldown(
                        pod, self.args.cooldown_seconds
                    ):
                        continue
                    try:
                        evictor.evict(pod, self.name)
                    except NodeLimitReached:
                        break
                    except TotalLimitReached:
                        return
                    except NamespaceLimitReached:
                        continue  # upstream's default branch: try the next pod
