"""RemovePodsViolatingInterPodAntiAffinity (Deschedule): evict pods whose required pod
anti-affinity is broken where they run (upstream ``pod_antiaffinity.go``).

The pods considered are the unfinished pods on the cycle's nodes that pass the
``namespaces`` and ``labelSelector`` args. Node by node, from low to high priority
(``SortPodsBasedOnPriorityLowToHigh``), a pod is evicted when a pod its own required
anti-affinity selects runs in its topology domain (``CheckPodsWithAntiAffinityExist``) and
the evictor's filter and preEvictionFilter accept it (DefaultEvictor's ``nodeFit`` applies).
An evicted pod stops counting at once, so of two pods that reject each other only the first
in that order goes. A node limit moves on to the next node, the total limit ends the run, a
namespace limit skips the pod.

How it scales: the pods are indexed by namespace, label and topology domain (``PodIndex``),
so each term of each pod is a few set operations, not a pass over its namespace's pods as
upstream's check makes; an eviction takes the pod out of the index at once.

Where we differ on purpose: upstream's ties in the priority order are arbitrary; ours go by
namespace and name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.config.schema import setting
from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.rules.antiaffinity import violation
from agent.descheduler.core.rules.podindex import PodIndex, Slot
from agent.descheduler.core.rules.podorder import eviction_order
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.wellknown import FINISHED_PHASES


@dataclass(frozen=True)
class RemovePodsViolatingInterPodAntiAffinityArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)


class RemovePodsViolatingInterPodAntiAffinity:
    name = "RemovePodsViolatingInterPodAntiAffinity"

    def __init__(self, args: RemovePodsViolatingInterPodAntiAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:
        evictor = self.handle.evictor
        by_node: dict[str, list[PodInfo]] = {}
        # Added node by node, so each namespace numbers its pods in the order of upstream's
        # per-namespace lists: the pod a term finds first is the one upstream's scan meets
        # first.
        index = PodIndex({node.name: node for node in nodes})
        slots: dict[int, Slot] = {}
        for node in nodes:
            pods = [
                pod
                for pod in self.handle.snapshot.pods_on(node.name)
                if pod.phase not in FINISHED_PHASES and self.pod_filter.admits_scope(pod)
            ]
            by_node[node.name] = pods
            for pod in pods:
                slots[id(pod)] = index.add(pod)
        for node in nodes:
            for pod in eviction_order(by_node[node.name]):
                other = violation(pod, index)
                if other is None:
                    continue
                if not self.pod_filter.admits_eviction(pod):
                    continue
                reason = f"required pod anti-affinity rejects {other.key} in its domain"
                try:
                    evicted = evictor.evict(pod, self.name, reason)
                except NodeLimitReached:
                    break
                except TotalLimitReached:
                    return
                except NamespaceLimitReached:
                    continue  # upstream's default branch: log and try the next pod
                if evicted:
                    # Gone: the pods it rejected, or that reject it, need not move too.
                    index.remove(slots[id(pod)])
