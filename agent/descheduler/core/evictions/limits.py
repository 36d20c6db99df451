"""Per-cycle eviction limits, checked Total -> PerNode -> PerNamespace as upstream's
``PodEvictor.EvictPod`` does (evictions.go), so the same limit text and the same plugin
reaction follow.

Counted when an eviction is *planned* and allowed, so a pool that sends planned evictions
concurrently can never exceed a limit, and an eviction a PDB blocks (upstream: a 429) is not
counted, as upstream does not count failed evictions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.model.cluster import PodInfo


@dataclass
class EvictionLimits:
    total: int | None = None
    per_node: int | None = None
    per_namespace: int | None = None
    evicted_total: int = 0
    evicted_by_node: Counter[str] = field(default_factory=Counter)
    evicted_by_namespace: Counter[str] = field(default_factory=Counter)

    def check(self, pod: PodInfo) -> None:
        """Raise the first limit one more eviction of ``pod`` would exceed."""
        if self.total is not None and self.evicted_total + 1 > self.total:
            raise TotalLimitReached(self.total)
        if (
            pod.node_name
            and self.per_node is not None
            and self.evicted_by_node[pod.node_name] + 1 > self.per_node
        ):
            raise NodeLimitReached(self.per_node, pod.node_name)
        if (
            self.per_namespace is not None
            and self.evicted_by_namespace[pod.namespace] + 1 > self.per_namespace
        ):
            raise NamespaceLimitReached(self.per_namespace, pod.namespace)

    def record(self, pod: PodInfo) -> None:
        self.evicted_total += 1
        if pod.node_name:
            self.evicted_by_node[pod.node_name] += 1
        self.evicted_by_namespace[pod.namespace] += 1
