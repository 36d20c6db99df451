"""The cluster as the plan leaves it, and the default kube-scheduler's pick for each pod.

Evictions take pods off their nodes, placements put replacements on; every filter and score
reads the nodes as they are at that point of the plan.

**Filter** (kube-scheduler's filter plugins; every one must pass):
- the node is Ready (the scheduler sees NotReady nodes through their ``not-ready`` taint),
  and it is not the node the pod is evicted from;
- NodeUnschedulable: a cordoned node only for a pod tolerating
  ``node.kubernetes.io/unschedulable:NoSchedule``;
- ours: a node whose fresh agent report says shutting down, readiness gate held or agent
  stopped is no place to go (``NodeUsage.usable_as_destination``);
- TaintToleration: every NoSchedule/NoExecute taint tolerated
  (``agent.kubesemantics.tolerations``);
- NodeAffinity: nodeSelector and required node affinity
  (``agent.kubesemantics.nodeaffinity``);
- NodeResourcesFit: each requested resource fits allocatable minus the requests of the pods
  there (pods this plan placed there earlier included, pods it evicted from there gone), and
  a pod slot is free;
- InterPodAffinity, its required anti-affinity half (``rules.antiaffinity``): no pod the
  pod's terms select in the node's topology domain, and no pod whose terms select the pod
  there;
- PodTopologySpread, ``DoNotSchedule`` constraints (``rules.topology``): the node carries the
  key and placing the pod there keeps the skew within ``maxSkew``.

Those of one node are ``nodes``'; the inter-pod ones are counted here, once per pod as the
scheduler's PreFilter counts them, from the pods in place indexed (``rules.podindex``).

**Score:** every default score plugin with its weight (``scoring``): from the rankings when
the pod allows it (``fastscore``), else on every feasible node (``fullscore``, the
reference). The best total wins; the scheduler picks at random among equal totals, so a pick
is every node tied at it, and the first of them by name. The scorers read the simulation as
a ``PlannedCluster``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import msgspec

from agent.descheduler.core.placement.fastscore import fast_path_applies, scored_fast
from agent.descheduler.core.placement.fullscore import scored_full
from agent.descheduler.core.placement.nodes import (
    PodSize,
    Ranking,
    new_node,
    resource_misfit,
    static_key,
    static_misfit,
)
from agent.descheduler.core.placement.profile import DEFAULT_PROFILE, SchedulerProfile
from agent.descheduler.core.placement.scoring import (
    SchedulerTerm,
    affinity_terms,
)
from agent.descheduler.core.rules.antiaffinity import (
    ParsedTerms,
    forbidden_domains,
    has_required_anti_affinity,
)
from agent.descheduler.core.rules.existingterms import ExistingTerms
from agent.descheduler.core.rules.podindex import PodIndex, Slot
from agent.descheduler.core.rules.topology import scheduler_spread_counts, spread_rejection
from agent.descheduler.model.cluster import CPU, MEMORY, PODS, ClusterSnapshot, NodeInfo, PodInfo
from agent.descheduler.plan.destinations import NodeLoad, Placement
from agent.kubesemantics.labelselector import SelectorError
from agent.kubesemantics.podaffinity import AffinityTerm
from agent.kubesemantics.wellknown import FINISHED_PHASES, HOSTNAME_LABEL, PREFER_NO_SCHEDULE

MAX_RANKINGS = 64
"""Pod sizes whose node ranking is kept (see ``Ranking``); a size past them costs a sort."""
OWN_NODE = "the node it is evicted from"


class Simulation:
    """The nodes' requests as the plan moves pods, and the scheduler's pick for each pod."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        *,
        fast: bool = True,
        profile: SchedulerProfile = DEFAULT_PROFILE,
    ) -> None:
        self.snapshot = snapshot
        self.fast = fast
        self.profile = profile
        """The score plugins and weights of the scheduler predicted for."""
        """Answer the pods it can from the rankings (off: score every node, the reference)."""
        self.nodes = [
            new_node(snapshot.nodes[name], index)
            for index, name in enumerate(sorted(snapshot.nodes))
        ]
        self.index = {node.info.name: node.index for node in self.nodes}
        self.owners: dict[str, Counter[int]] = {}
        """Controller UID -> node index -> its scheduled pods there (not terminating): what
        the system default spread constraints count."""
        self.anti_affinity_of = ParsedTerms()
        self.pod_index = PodIndex(snapshot.nodes)
        """The unfinished pods as the plan leaves them, for the inter-pod filter and score."""
        self.anti_affinity_terms: ExistingTerms[AffinityTerm] = ExistingTerms(snapshot.nodes)
        """Required anti-affinity of the pods in place: each newcomer is checked against it."""
        self.required_affinity: ExistingTerms[SchedulerTerm] = ExistingTerms(snapshot.nodes)
        self.preferred_affinity: ExistingTerms[SchedulerTerm] = ExistingTerms(snapshot.nodes)
        self.preferred_anti_affinity: ExistingTerms[SchedulerTerm] = ExistingTerms(snapshot.nodes)
        """The terms of the pods in place that add to InterPodAffinity's scores of a newcomer."""
        self._slots: dict[str, list[Slot]] = {}
        """Pod uid -> its slots in the index (the snapshot's pods, in place)."""
        self._ghost_slots: dict[int, Slot] = {}
        """``id`` of a placed replacement -> its slot."""
        self._anti_affine: Counter[str] = Counter()
        self._scorers: Counter[str] = Counter()
        """Uids of the pods, finished ones too, with required anti-affinity or with terms
        that score: while there are none, a newcomer without them needs no inter-pod check,
        and may be scored from the rankings."""
        for node in self.nodes:
            for pod in snapshot.pods_on(node.info.name):
                if pod.phase not in FINISHED_PHASES:
                    node.add(pod, +1)
                    self._count_owner(pod, node.index, +1)
                    slot = self._index(pod)
                    self._slots.setdefault(pod.uid, []).append(slot)
                self._count_terms(pod, +1)
        self.before = {node.info.name: node.load() for node in self.nodes}
        self._rankings: dict[PodSize, Ranking] = {}
        """By pod size; the dict's order is the order of last use."""
        self.gone: set[str] = set()
        """UIDs of the pods the plan evicted so far."""
        self.placed: list[PodInfo] = []
        """The replacement pods placed so far, each with ``node_name`` its destination."""
        self._static: dict[str, tuple[frozenset[int], Counter[str]]] = {}
        self._placed_on: dict[str, list[PodInfo]] = {}
        self.soft_tainted = [n.index for n in self.nodes if has_soft_taint(n.info)]
        self.unnamed_hosts = frozenset(
            n.index for n in self.nodes if HOSTNAME_LABEL not in n.info.labels
        )
        """Nodes without the hostname label: the system default spread skips its hostname
        constraint there, so their score is not their zone's."""
        members: dict[str | None, set[int]] = {}
        for node in self.nodes:
            members.setdefault(node.zone, set()).add(node.index)
        self.zone_members = {zone: frozenset(found) for zone, found in members.items()}
        """Zone -> its nodes' indexes."""
        self.image_nodes: Counter[str] = Counter(
            name for node in self.nodes for name in node.info.images
        )

    # -- the cluster as the plan leaves it -------------------------------------------------

    def pods(self) -> Iterable[PodInfo]:
        """Every pod as the plan leaves the cluster so far: evicted ones gone, placed ones in."""
        for node in self.nodes:
            yield from self.pods_on(node.info.name)

    def pods_on(self, node_name: str) -> Iterable[PodInfo]:
        """The pods on a node as the plan leaves it so far."""
        for pod in self.snapshot.pods_on(node_name):
            if pod.uid not in self.gone:
                yield pod
        yield from self._placed_on.get(node_name, ())

    @property
    def has_affinity_scorers(self) -> bool:
        """Whether a pod (finished ones too) has terms that add to InterPodAffinity's scores."""
        return bool(self._scorers)

    def slots_of(self, uid: str) -> tuple[Slot, ...]:
        """The index's slots of the snapshot's pods with ``uid`` still in place."""
        return tuple(self._slots.get(uid, ()))

    def _index(self, pod: PodInfo) -> Slot:
        """Put an unfinished pod in place into the index and the terms in place."""
        slot = self.pod_index.add(pod)
        if has_required_anti_affinity(pod):
            try:
                terms = self.anti_affinity_of(pod)
            except SelectorError:
                terms = ()  # the scheduler skips the terms of a pod in place that do not parse
            self.anti_affinity_terms.add(slot, pod.uid, pod.node_name, terms)
        scoring = affinity_terms(pod)
        if scoring.scores:
            self.required_affinity.add(slot, pod.uid, pod.node_name, scoring.required_affinity)
            self.preferred_affinity.add(slot, pod.uid, pod.node_name, scoring.preferred_affinity)
            self.preferred_anti_affinity.add(
                slot, pod.uid, pod.node_name, scoring.preferred_anti_affinity
            )
        return slot

    def _unindex(self, slot: Slot) -> None:
        self.pod_index.remove(slot)
        for terms in (
            self.anti_affinity_terms,
            self.required_affinity,
            self.preferred_affinity,
            self.preferred_anti_affinity,
        ):
            terms.remove(slot)

    def _count_terms(self, pod: PodInfo, sign: int) -> None:
        for counter, counts in (
            (self._anti_affine, has_required_anti_affinity(pod)),
            (self._scorers, affinity_terms(pod).scores),
        ):
            if counts:
                counter[pod.uid] += sign
                if counter[pod.uid] <= 0:
                    del counter[pod.uid]

    def _count_owner(self, pod: PodInfo, index: int, sign: int) -> None:
        controller = pod.controller
        if controller is not None and controller.uid and not pod.deleting:
            counts = self.owners.setdefault(controller.uid, Counter())
            counts[index] += sign
            if not counts[index]:
                del counts[index]

    def _move(self, index: int, pod: PodInfo, sign: int) -> None:
        """Add or remove ``pod`` on a node, and mark the node for re-ranking."""
        node = self.nodes[index]
        node.add(pod, sign)
        self._count_owner(pod, index, sign)
        for ranking in self._rankings.values():
            ranking.stale.add(index)

    def ranking(self, size: PodSize) -> Ranking:
        ranking = self._rankings.pop(size, None)
        if ranking is None:
            if len(self._rankings) >= MAX_RANKINGS:
                del self._rankings[next(iter(self._rankings))]
            ranking = Ranking(self.nodes, size, self.profile)
        else:
            ranking.catch_up(self.nodes)
        self._rankings[size] = ranking  # last used: moved to the end
        return ranking

    def evict(self, pod: PodInfo) -> None:
        index = self.index.get(pod.node_name)
        if index is not None and pod.uid not in self.gone and pod.phase not in FINISHED_PHASES:
            self._move(index, pod, -1)
        self.gone.add(pod.uid)
        for slot in self._slots.pop(pod.uid, ()):
            self._unindex(slot)
        if has_required_anti_affinity(pod):
            self._anti_affine.pop(pod.uid, None)
        if affinity_terms(pod).scores:
            self._scorers.pop(pod.uid, None)

    def land(self, pod: PodInfo, node_name: str) -> None:
        """Put the replacement of ``pod`` on ``node_name``."""
        ghost = msgspec.structs.replace(
            pod, uid=f"{pod.uid}/replacement", node_name=node_name, deleting=False
        )
        self._move(self.index[node_name], ghost, +1)
        self.placed.append(ghost)
        self._placed_on.setdefault(node_name, []).append(ghost)
        if ghost.phase not in FINISHED_PHASES:
            self._ghost_slots[id(ghost)] = self._index(ghost)
        self._count_terms(ghost, +1)

    def unland(self, pod: PodInfo) -> None:
        """Take the replacement of ``pod`` off its node again (the last one ``land`` put)."""
        uid = f"{pod.uid}/replacement"
        ghost = _pop_last(self.placed, lambda placed: placed.uid == uid)
        self._move(self.index[ghost.node_name], ghost, -1)
        _pop_last(self._placed_on[ghost.node_name], lambda placed: placed is ghost)
        slot = self._ghost_slots.pop(id(ghost), None)
        if slot is not None:
            self._unindex(slot)
        self._count_terms(ghost, -1)

    # -- the scheduler's pick ----------------------------------------------------------------

    def _statically_feasible(self, pod: PodInfo) -> tuple[frozenset[int], Counter[str]]:
        key = static_key(pod)
        found = self._static.get(key)
        if found is None:
            feasible: set[int] = set()
            rejected: Counter[str] = Counter()
            for node in self.nodes:
                reason = static_misfit(pod, node.info, self.snapshot)
                if reason is None:
                    feasible.add(node.index)
                else:
                    rejected[reason] += 1
            found = self._static[key] = (frozenset(feasible), rejected)
        return found

    def pick(self, pod: PodInfo) -> Placement:
        """Where the scheduler would put a new pod like ``pod``, not on its node: the nodes
        tied at the best score, and the first of them by name."""
        static, rejected = self._statically_feasible(pod)
        try:
            inter_pod = self._inter_pod_check(pod)
            scored = (
                scored_fast(self, pod, static)
                if self.fast and inter_pod is None and fast_path_applies(self, pod, static)
                else None
            )
            if scored is None:
                feasible, reasons = self._feasible(pod, static, inter_pod, rejected)
                if not feasible:
                    return Placement(None, _no_fit(len(self.nodes), reasons))
                scored = scored_full(self, pod, feasible)
        except SelectorError as error:
            return Placement(None, f"a selector of the pod does not parse: {error}")
        if not scored.nodes:
            feasible, reasons = self._feasible(pod, static, inter_pod, rejected)
            return Placement(None, _no_fit(len(self.nodes), reasons))
        names = tuple(sorted(self.nodes[index].info.name for index in scored.nodes))
        return Placement(names[0], candidates=names)

    def _feasible(
        self,
        pod: PodInfo,
        static: frozenset[int],
        inter_pod: Callable[[NodeInfo], str | None] | None,
        rejected: Counter[str],
    ) -> tuple[list[int], Counter[str]]:
        """Every node passing every filter, and why the others did not."""
        reasons = Counter(rejected)
        feasible = []
        for index in sorted(static):
            node = self.nodes[index]
            if node.info.name == pod.node_name:
                reasons[OWN_NODE] += 1
                continue
            reason = resource_misfit(node, pod) or (inter_pod and inter_pod(node.info))
            if reason:
                reasons[_reason_kind(reason)] += 1
                continue
            feasible.append(index)
        return feasible, reasons

    def _inter_pod_check(self, pod: PodInfo) -> Callable[[NodeInfo], str | None] | None:
        """The anti-affinity and spread filters for ``pod`` (spread counted once, as the
        scheduler's PreFilter does); ``None`` when neither can reject it (most pods)."""
        spread = scheduler_spread_counts(pod, self.snapshot.nodes.values(), self.pod_index)
        if not spread and not self._anti_affine and not has_required_anti_affinity(pod):
            return None
        forbidden = forbidden_domains(
            pod,
            self.pod_index,
            self.anti_affinity_terms,
            excluding=self.slots_of(pod.uid),
            terms_of=self.anti_affinity_of,
        )

        def check(node: NodeInfo) -> str | None:
            return spread_rejection(spread, node) or forbidden.rejection(node)

        return check

    # -- the outcome ------------------------------------------------------------------------

    def loads(self) -> tuple[NodeLoad, ...]:
        return tuple(
            NodeLoad(
                node=node.info.name,
                allocatable={
                    CPU: node.alloc_cpu,
                    MEMORY: node.alloc_memory,
                    PODS: node.alloc_pods,
                },
                before=self.before[node.info.name],
                after=node.load(),
            )
            for node in self.nodes
        )


def has_soft_taint(node: NodeInfo) -> bool:
    return any(taint.get("effect") == PREFER_NO_SCHEDULE for taint in node.taints)


def _reason_kind(reason: str) -> str:
    """A filter's reason without the names in it, so that nodes count together in the no-fit
    summary ("3 node(s) didn't match pod anti-affinity rules", as the scheduler says)."""
    if "anti-affinity" in reason:
        return "pod anti-affinity"
    if "topology spread" in reason:
        return "topology spread constraints"
    return reason


def _no_fit(total: int, reasons: Counter[str]) -> str:
    """The scheduler's "0/N nodes are available: ..." summary."""
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return f"0/{total} nodes are available: {parts}" if parts else f"0/{total} nodes"


def _pop_last(items: list[PodInfo], wanted: Callable[[PodInfo], bool]) -> PodInfo:
    """Remove and return the last item ``wanted`` accepts. Searched from the end: the
    windows unland what they landed last, a step or two back, where ``list.remove`` would
    scan every placement from the front."""
    for at in range(len(items) - 1, -1, -1):
        if wanted(items[at]):
            return items.pop(at)
    raise ValueError("no such placement")
