"""The order in which upstream's plugins consider a node's pods for eviction.

``SortPodsBasedOnPriorityLowToHigh`` (``pkg/descheduler/pod/pods.go``) is shared by the
utilization plugins and RemovePodsViolatingInterPodAntiAffinity, so it lives here, once.
Upstream's ties are arbitrary (``sort.Slice``); ours go by namespace and name, so a cycle
cut short by a limit is reproducible.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.model.keys import PREFER_NO_EVICTION_ANNOTATION

QOS_ORDER = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def eviction_key(pod: PodInfo) -> tuple[bool, int, int, bool]:
    """``SortPodsBasedOnPriorityLowToHigh``'s order: nil priority first, then low to high;
    then BestEffort < Burstable < Guaranteed; then pods without prefer-no-eviction first."""
    return (
        pod.priority is not None,
        pod.priority or 0,
        QOS_ORDER.get(pod.qos, 2),
        PREFER_NO_EVICTION_ANNOTATION in pod.annotations,
    )


def eviction_order(pods: Iterable[PodInfo]) -> list[PodInfo]:
    """Upstream's order, ties by namespace and name (upstream's are arbitrary)."""
    return sorted(pods, key=lambda p: (eviction_key(p), p.namespace, p.name))
