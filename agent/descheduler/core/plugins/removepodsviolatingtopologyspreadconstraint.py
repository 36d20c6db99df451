"""RemovePodsViolatingTopologySpreadConstraint (Balance): move the fewest pods that bring
every topology spread constraint back within its ``maxSkew`` (upstream
``topologyspreadconstraint.go``).

The pods counted are the unfinished, non-terminating pods on the cycle's nodes that pass the
evictor's filter and the ``namespaces`` and ``labelSelector`` args. Per namespace, the distinct
constraints of those pods whose ``whenUnsatisfiable`` is listed in ``constraints``
(``DoNotSchedule`` by default) are read as ``topology.SpreadConstraint`` (``matchLabelKeys``,
``nodeAffinityPolicy``, ``nodeTaintsPolicy``). For each, the selected pods are counted per
domain of the included nodes; a constraint whose largest and smallest domains differ by at
most ``maxSkew`` is left alone. Otherwise upstream's ``balanceDomains``:

- domains sorted by size; ``i`` walks up from the smallest, ``j`` down from the largest;
  ``idealAvg`` = pods / domains;
- while ``i < j``: a domain ``j`` at or below the average gives way to the next; when
  ``j - i`` is within ``maxSkew`` the next ``i`` is taken; else ``min(ceil(j - avg),
  ceil(avg - i), ceil((skew - maxSkew) / 2))`` pods move from ``j`` to ``i`` (none: next ``i``);
- the pods that move are taken from the end of ``j``'s list, which is ordered: pods the
  evictor refuses, then pods with a nodeSelector or node affinity, then the rest, each by
  ascending priority (nil first), so the highest-priority pods without placement rules go
  first (as v0.36 does, whatever its comment says); then, stably, the pods that fit a node of
  a domain below the average move to the end;
- with ``topologyBalanceNodeFit`` (default true) a chosen pod that fits no other node of the
  domains below the average (``NodeFit``) stays, but counts as moved, as upstream does.

The chosen pods are then evicted if the filter, the args and the preEvictionFilter
(DefaultEvictor's ``nodeFit``) accept them; a node limit skips that node's other pods, the total
limit ends the run, a namespace limit skips the pod.

Where we differ on purpose: upstream walks Go maps and an unstable sort, so the order of
namespaces, of equal-sized domains, of equal pods and of the evictions is random; ours are
by namespace, domain value, and namespace and name (the last goes first), and evictions go
in the order they were chosen.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agent.config.schema import setting
from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.podfilter import PodFilter
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.rules.nodefit import NodeFit
from agent.descheduler.core.rules.topology import (
    SpreadConstraint,
    domain_pods,
    raw_spread_constraints,
    spread_constraint,
)
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.labelselector import SelectorError
from agent.kubesemantics.wellknown import DO_NOT_SCHEDULE, FINISHED_PHASES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemovePodsViolatingTopologySpreadConstraintArgs:
    namespaces: Namespaces | None = setting(None)
    label_selector: LabelSelector | None = setting(None)
    constraints: tuple[Literal["DoNotSchedule", "ScheduleAnyway"], ...] = setting(factory=tuple)
    """Empty means ``[DoNotSchedule]``, upstream's default."""
    topology_balance_node_fit: bool = setting(True)


@dataclass
class Domain:
    value: str
    pods: list[PodInfo] = field(default_factory=list)


def has_selector_or_affinity(pod: PodInfo) -> bool:
    return bool(pod.node_selector) or (pod.affinity or {}).get("nodeAffinity") is not None


class RemovePodsViolatingTopologySpreadConstraint:
    name = "RemovePodsViolatingTopologySpreadConstraint"

    def __init__(
        self, args: RemovePodsViolatingTopologySpreadConstraintArgs, handle: Handle
    ) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodFilter.build(handle.evictor, args.namespaces, args.label_selector)
        self.allowed = frozenset(args.constraints or (DO_NOT_SCHEDULE,))
        self.node_fit = NodeFit(handle.snapshot)

    def _admits(self, pod: PodInfo) -> bool:
        return self.pod_filter.admits_scope(pod) and self.handle.evictor.filter(pod)

    def constraints_of(self, pods: Sequence[PodInfo]) -> list[SpreadConstraint]:
        """The distinct allowed constraints the pods carry, in first-seen order."""
        found: list[SpreadConstraint] = []
        for pod in pods:
            for raw in raw_spread_constraints(pod):
                if raw.get("whenUnsatisfiable") not in self.allowed:
                    continue
                try:
                    constraint = spread_constraint(raw, pod)
                except SelectorError as error:
                    log.warning(
                        "pod %s: cannot read a topology spread constraint: %s", pod.key, error
                    )
                    continue
                if constraint not in found:
                    found.append(constraint)
        return found

    def balance(self, nodes: Sequence[NodeInfo]) -> None:
        node_map = {node.name: node for node in nodes}
        by_namespace: dict[str, list[PodInfo]] = defaultdict(list)
        for node in nodes:
            for pod in self.handle.snapshot.pods_on(node.name):
                if pod.phase not in FINISHED_PHASES:
                    by_namespace[pod.namespace].append(pod)
        chosen: dict[str, PodInfo] = {}
        for namespace in sorted(by_namespace):
            if not any(raw_spread_constraints(pod) for pod in by_namespace[namespace]):
                continue  # most namespaces: no constraint, so no pod needs the filters
            pods = [pod for pod in by_namespace[namespace] if self._admits(pod)]
            for constraint in self.constraints_of(pods):
                domains = self.domains(constraint, node_map, pods)
                sizes = [len(d.pods) for d in domains]
                if not sizes or max(sizes) - min(sizes) <= constraint.max_skew:
                    continue  # topologyIsBalanced
                for pod in self.balance_domains(constraint, domains, nodes):
                    chosen.setdefault(pod.uid, pod)
        self._evict(chosen.values())

    @staticmethod
    def domains(
        constraint: SpreadConstraint, node_map: Mapping[str, NodeInfo], pods: Sequence[PodInfo]
    ) -> list[Domain]:
        """The constraint's domains, smallest first, each with its selected pods."""
        domains = [Domain(v, found) for v, found in domain_pods(constraint, node_map, pods).items()]
        return sorted(domains, key=lambda d: (len(d.pods), d.value))

    def _order(self, pods: list[PodInfo]) -> list[PodInfo]:
        """``sortDomains``' pod order; the end of the list goes first."""
        evictor = self.handle.evictor
        return sorted(
            pods,
            key=lambda p: (
                evictor.filter(p),
                not has_selector_or_affinity(p),
                p.priority is not None,
                p.priority or 0,
                p.namespace,
                p.name,
            ),
        )

    def balance_domains(
        self, constraint: SpreadConstraint, domains: list[Domain], nodes: Sequence[NodeInfo]
    ) -> list[PodInfo]:
        """Upstream's ``balanceDomains``: the pods to evict from the domains above average."""
        ideal = sum(len(d.pods) for d in domains) / len(domains)
        for domain in domains:
            domain.pods = self._order(domain.pods)
        eligible = [node for node in nodes if constraint.includes(node)]
        below_values = {d.value for d in domains if len(d.pods) < ideal}
        below = [n for n in eligible if constraint.domain_of(n) in below_values]
        fits: dict[str, bool] = {}

        def fits_below(pod: PodInfo) -> bool:
            if pod.uid not in fits:
                fits[pod.uid] = self.node_fit.fits_any_other(pod, below)
            return fits[pod.uid]

        chosen: list[PodInfo] = []
        i, j = 0, len(domains) - 1
        while i < j:
            if len(domains[j].pods) <= ideal:
                j -= 1
            skew = len(domains[j].pods) - len(domains[i].pods)
            if skew <= constraint.max_skew:
                i += 1
                continue
            above_avg = math.ceil(len(domains[j].pods) - ideal)
            below_avg = math.ceil(ideal - len(domains[i].pods))
            half_skew = math.ceil((skew - constraint.max_skew) / 2)
            move = min(above_avg, below_avg, half_skew)
            if move <= 0:
                i += 1
                continue
            giver = domains[j]
            giver.pods.sort(key=fits_below)  # stable: fitting pods to the end, order kept
            moving = giver.pods[-move:]
            for pod in moving:
                if self.args.topology_balance_node_fit and not fits_below(pod):
                    continue  # would land back where it is; still counted as moved
                chosen.append(pod)
            giver.pods = giver.pods[:-move]
            domains[i].pods.extend(moving)
        return chosen

    def _evict(self, pods: Iterable[PodInfo]) -> None:
        evictor = self.handle.evictor
        full_nodes: set[str] = set()
        for pod in pods:
            if pod.node_name in full_nodes or not self._admits(pod):
                continue
            if not evictor.pre_eviction_filter(pod):
                continue
            try:
                evictor.evict(pod, self.name, "topology spread constraint skew above maxSkew")
            except NodeLimitReached:
                full_nodes.add(pod.node_name)
            except TotalLimitReached:
                return
            except NamespaceLimitReached:
                continue  # upstream's default branch: log and try the next pod
