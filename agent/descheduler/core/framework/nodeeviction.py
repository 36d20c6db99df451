"""Evicting one node's condemned pods in order, with upstream's answer to each limit.

Upstream's Deschedule plugins share one loop per node: a node limit ends that node, the total
limit ends the plugin, a namespace limit skips the pod and goes on (the ``default`` branch of
their ``switch``). The plugins that walk nodes that way hand it their (pod, reason) pairs
lazily, so no pod after a node's limit is even judged.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.core.framework.types import Evictor
from agent.descheduler.model.cluster import PodInfo


def evict_in_order(evictor: Evictor, plugin: str, condemned: Iterable[tuple[PodInfo, str]]) -> bool:
    """Evict each (pod, reason) in turn; ``False`` once the total limit ends the plugin."""
    for pod, reason in condemned:
        try:
            evictor.evict(pod, plugin, reason)
        except NodeLimitReached:
            return True
        except TotalLimitReached:
            return False
        except NamespaceLimitReached:
            continue
    return True
