"""The order in which upstream's plugins consider a node's pods for eviction.

``SortPodsBasedOnPriorityLowToHigh`` (``pkg/descheduler/pod/pods.go``) is shared by the
utilization plugins and RemovePodsViolatingInterPodAntiAffinity, so it lives here, once.
Upstream's ties are arbitrary (``sort.Slice``); ours go by namespace and name, so a cycle
cut short by a limit is reproducible.

On real usage (ours: upstream balances on requests only), the utilization plugins order pods
of equal keys by ``spread_order``: spread across their owners, then the biggest real users
first. On a usage signal with no per-pod figures (a Prometheus node signal), by
``round_robin_order``: round robin by owner, then by uid. Only among equal keys, so
upstream's priority and QoS order always holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.model.keys import PREFER_NO_EVICTION_ANNOTATION
from agent.kubesemantics.qos import QOSClass

QOS_ORDER: dict[str, int] = {QOSClass.BEST_EFFORT: 0, QOSClass.BURSTABLE: 1, QOSClass.GUARANTEED: 2}


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


class Share(Protocol):
    """What ``spread_order`` reads of a workload's implicit budget (``ImplicitBudget``)."""

    @property
    def key(self) -> str: ...

    @property
    def max_unavailable(self) -> int: ...


def spread_order(
    pods: Iterable[PodInfo],
    size: Callable[[PodInfo], tuple[int, int]],
    share: Callable[[PodInfo], Share | None],
) -> list[PodInfo]:
    """Upstream's order; among equal keys, each owner's pods in waves of its share, and
    within a wave the biggest real users first (``size``: CPU, then memory).

    An owner's first ``max_unavailable`` pods (by size) are its first wave, the next as many
    its second, and so on (``share``: its implicit budget; a pod without one is in the
    first). So where several pods would bring a node under its target, the biggest users of
    every owner go before any owner's pods beyond what its rollout would take down at once:
    those would only wait for replacements, and the node is relieved sooner without them.
    """
    by_size = sorted(
        pods, key=lambda p: (eviction_key(p), -size(p)[0], -size(p)[1], p.namespace, p.name)
    )
    taken: dict[tuple[tuple[bool, int, int, bool], str], int] = {}
    wave: dict[str, int] = {}
    for pod in by_size:
        budget = share(pod)
        if budget is None:
            wave[pod.uid] = 0
            continue
        group = (eviction_key(pod), budget.key)
        rank = taken.get(group, 0)
        taken[group] = rank + 1
        wave[pod.uid] = rank // max(1, budget.max_unavailable)
    # A stable sort: within a key and a wave, the size order above holds.
    return sorted(by_size, key=lambda p: (eviction_key(p), wave[p.uid]))


def round_robin_order(
    pods: Sequence[PodInfo],
    owner: Callable[[PodInfo], str],
    spent: Callable[[str], bool],
) -> list[PodInfo]:
    """Upstream's order; among equal keys, round robin by owner: each owner's first pod, then
    each owner's second, and so on; within a round the owners not ``spent`` (that lost no pod
    earlier in the cycle) first; then by uid.

    For pods with no usage to weigh (a Prometheus node signal: one pod per node per cycle).
    Upstream's order among them is its pod informer's, which is Go's map order: effectively
    random, so no owner goes first on every node. Names would make one: a Deployment's pods
    share its name's prefix, so by name the same Deployment's pods lead on every node, cycle
    after cycle, however little they use. UIDs are random (the API server gives every object
    a random UUID), so by uid is as arbitrary as upstream's order, yet the same snapshot
    gives the same plan. ``owner`` is a pod's owner key (a bare pod is its own).
    """
    by_uid = sorted(pods, key=lambda p: (eviction_key(p), p.uid))
    taken: dict[tuple[tuple[bool, int, int, bool], str], int] = {}
    rank: dict[str, tuple[int, bool]] = {}
    for pod in by_uid:
        key = owner(pod)
        group = (eviction_key(pod), key)
        rank[pod.uid] = (taken.get(group, 0), spent(key))
        taken[group] = rank[pod.uid][0] + 1
    # A stable sort: within a key, a round and spent-or-not, the uid order above holds.
    return sorted(by_uid, key=lambda p: (eviction_key(p), rank[p.uid]))
