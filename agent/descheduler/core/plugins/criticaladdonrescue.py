"""CriticalAddonRescue (Balance, ours, opt-in): make room for a critical add-on that cannot
be scheduled, the way the retired Kubernetes rescheduler meant to, but choosing carefully.

Trigger: a pod bound to no node, in one of ``systemNamespaces`` (default ``kube-system``),
critical (annotated ``scheduler.alpha.kubernetes.io/critical-pod``, or priority >=
2000000000), whose ``PodScheduled`` condition has said False/``Unschedulable`` for at least
``unschedulableSeconds``. It must tolerate the rescue taint (the rescheduler's contract: every
critical add-on tolerates ``CriticalAddonsOnly``), or the taint would keep it out too.

Choice (pure, ``choose_node``): on every cycle node (Ready, the policy's nodeSelector) that is
schedulable, not reported shutting down, gated or stopped (NodeReports), carries no
``CriticalAddonsOnly:NoSchedule`` taint yet, and takes the add-on by nodeSelector, required
node affinity and taints, find the victims as kube-scheduler's preemption does
(``selectVictimsOnNode``): remove every removable pod of no higher priority than the add-on
(equal counts: an add-on without a PriorityClass has priority 0, like most pods, and that is
where preemption cannot help), and
if the add-on then fits its requests, put pods back from the highest priority down while it
still fits; the rest are the victims. Removable: not a DaemonSet, mirror, static or critical
pod, not finished or terminating, passed by the profile's filters (DefaultEvictor), and of
no higher priority than the add-on. The node is the one with the fewest victims, then the lowest
highest victim priority, then the lowest sum of priorities, then by name; a node whose victims
a PDB or an eviction limit would not let go is passed over. A node where the add-on fits
without evicting anything is not ours to fix (something else keeps it out): no rescue.

Act: the plan gets the taint ``CriticalAddonsOnly=<namespace>_<pod>:NoSchedule`` on the node
(``_``, as the rescheduler wrote it: a taint value may not hold ``/``),
then the victims' evictions. The runtime applies the taint first and sends the evictions only
once it holds, removes it when the add-on is bound (or after ``taintTimeoutSeconds``), and
posts the Events (``agent.descheduler.rescue``). One rescue per node and per add-on at a time:
a node with a ``CriticalAddonsOnly:NoSchedule`` taint is never chosen, and an add-on is being
rescued while the descheduler's own record (``snapshot.taint_record``, kept on its Lease: see
``model.taintrecord``) holds a rescue of it that has not reached its end. Never while a node
merely carries our rescue annotation: any node may write its own Node's annotations, and one
such mark once switched the rescue off for the whole cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agent.config.errors import FieldError
from agent.config.schema import setting
from agent.descheduler.core.errors import EvictionLimitReached
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import NodeInfo, NodeUsage, PodInfo
from agent.descheduler.model.keys import CRITICAL_POD_ANNOTATION, UNSCHEDULABLE_SINCE
from agent.descheduler.model.taintrecord import TaintRecord
from agent.descheduler.plan.shape import TaintChange
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.nodekeys import RESCUE_ANNOTATION, RESCUE_TAINT_KEY
from agent.kubesemantics.taintownership import rescue_taint, rescue_value
from agent.kubesemantics.tolerations import tolerates, untolerated
from agent.kubesemantics.wellknown import (
    DAEMON_SET_KIND,
    FINISHED_PHASES,
    NO_SCHEDULE,
    SYSTEM_CRITICAL_PRIORITY,
    SYSTEM_NAMESPACE,
)

NAME = "CriticalAddonRescue"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CriticalAddonRescueArgs:
    system_namespaces: tuple[str, ...] = setting(factory=lambda: (SYSTEM_NAMESPACE,))
    """Where critical add-ons live (the rescheduler's ``--system-namespace``)."""
    unschedulable_seconds: float = setting(60.0, minimum=0)
    """How long an add-on must have been Unschedulable before we act."""
    taint_timeout_seconds: float = setting(600.0, minimum=1)
    """How long the rescue taint stays when the add-on is not scheduled (the rescheduler's
    10 minutes)."""

    def validate(self) -> list[FieldError]:
        errors = [
            FieldError(f"systemNamespaces[{index}]", "must not be empty")
            for index, namespace in enumerate(self.system_namespaces)
            if not namespace
        ]
        if not self.system_namespaces:
            errors.append(FieldError("systemNamespaces", "must name at least one namespace"))
        return errors


def priority_of(pod: PodInfo, priority_classes: Mapping[str, int]) -> int:
    """``spec.priority``, else its class's value, else 0 (a pod with no priority)."""
    if pod.priority is not None:
        return pod.priority
    return priority_classes.get(pod.priority_class_name, 0)


def is_critical(
    pod: PodInfo, system_namespaces: Sequence[str], priority_classes: Mapping[str, int]
) -> bool:
    """Annotated critical in a system namespace, or system-critical by priority anywhere."""
    if priority_of(pod, priority_classes) >= SYSTEM_CRITICAL_PRIORITY:
        return True
    return pod.namespace in system_namespaces and CRITICAL_POD_ANNOTATION in pod.annotations


def _is_daemon(pod: PodInfo) -> bool:
    return any(owner.kind == DAEMON_SET_KIND for owner in pod.owners)


def _fits(need: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(amount <= free.get(name, 0) for name, amount in need.items() if amount > 0)


@dataclass(frozen=True)
class NodeOption:
    """One node where the add-on fits once ``victims`` are gone."""

    node: str
    victims: tuple[PodInfo, ...]
    priorities: tuple[int, ...]
    """The victims' priorities, in the same order."""

    @property
    def rank(self) -> tuple[int, int, int, str]:
        """Fewest victims, then the lowest highest priority, the lowest sum, the name."""
        return (
            len(self.victims),
            max(self.priorities, default=0),
            sum(self.priorities),
            self.node,
        )


def victims_on(
    addon_requests: Mapping[str, int],
    node: NodeInfo,
    pods: Sequence[PodInfo],
    removable: Callable[[PodInfo], bool],
    priority: Callable[[PodInfo], int],
) -> tuple[PodInfo, ...] | None:
    """The pods to evict so the add-on fits: ``()`` when it fits already, ``None`` when it
    does not fit even with every removable pod gone."""
    free = dict(node.allocatable)
    candidates: list[PodInfo] = []
    for pod in pods:
        if pod.phase in FINISHED_PHASES:
            continue
        for name, amount in pod.requests.items():
            free[name] = free.get(name, 0) - amount
        if removable(pod):
            candidates.append(pod)
    if _fits(addon_requests, free):
        return ()
    for pod in candidates:
        for name, amount in pod.requests.items():
            free[name] = free.get(name, 0) + amount
    if not _fits(addon_requests, free):
        return None
    # Reprieve from the highest priority down (kube-scheduler's order); ties by name.
    victims: list[PodInfo] = []
    for pod in sorted(candidates, key=lambda p: (-priority(p), p.namespace, p.name)):
        after = {name: free.get(name, 0) - amount for name, amount in pod.requests.items()}
        if _fits(addon_requests, {**free, **after}):
            free.update(after)
        else:
            victims.append(pod)
    return tuple(sorted(victims, key=lambda p: (priority(p), p.namespace, p.name)))


def node_admits(addon: PodInfo, node: NodeInfo, usage: NodeUsage | None) -> str | None:  # noqa: PLR0911 - one exit per predicate
    """Why the add-on may not go to this node (whatever the room), or ``None``."""
    if node.unschedulable:
        return "node is not schedulable"
    if usage is not None and not usage.usable_as_destination:
        return "node's agent reports it shutting down, gated or stopped"
    if any(
        t.get("key") == RESCUE_TAINT_KEY and t.get("effect") == NO_SCHEDULE for t in node.taints
    ):
        return f"node already has a {RESCUE_TAINT_KEY} taint"
    if reason := node_selector_mismatch(addon.node_selector, node.labels):
        return reason
    if reason := required_affinity_mismatch(
        {"affinity": addon.affinity or {}}, node.labels, node.name
    ):
        return reason
    if untolerated(node.taints, list(addon.tolerations)):
        return "add-on does not tolerate the node's taints"
    return None


def choose_node(  # noqa: PLR0917 - the pure core: every input is plain data
    addon: PodInfo,
    nodes: Sequence[NodeInfo],
    pods_on: Callable[[str], Sequence[PodInfo]],
    usage: Mapping[str, NodeUsage],
    removable: Callable[[PodInfo], bool],
    priority: Callable[[PodInfo], int],
) -> list[NodeOption]:
    """Every node where evicting some pods makes the add-on fit, best first.

    Empty when the add-on fits somewhere already (the scheduler, not room, is the problem) or
    fits nowhere even with every removable pod gone.
    """
    own = priority(addon)

    def not_higher(pod: PodInfo) -> bool:
        return priority(pod) <= own and removable(pod)

    options: list[NodeOption] = []
    for node in nodes:
        if node_admits(addon, node, usage.get(node.name)) is not None:
            continue
        victims = victims_on(addon.requests, node, pods_on(node.name), not_higher, priority)
        if victims is None:
            continue
        if not victims:
            return []
        options.append(NodeOption(node.name, victims, tuple(priority(p) for p in victims)))
    return sorted(options, key=lambda option: option.rank)


def rescues_in_flight(record: TaintRecord, now: float) -> set[str]:
    """The rescue taint values our record holds, of rescues that have not reached their end
    (a rescue is over at its end even if its entry outlived it)."""
    rescues = record.on_nodes(RESCUE_ANNOTATION).values()
    return {entry.value for entry in rescues if now < entry.until}


class CriticalAddonRescue:
    name = NAME

    def __init__(self, args: CriticalAddonRescueArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    def _priority(self, pod: PodInfo) -> int:
        return priority_of(pod, self.handle.snapshot.priority_classes)

    def _critical(self, pod: PodInfo) -> bool:
        return is_critical(pod, self.args.system_namespaces, self.handle.snapshot.priority_classes)

    def _removable(self, pod: PodInfo) -> bool:
        if pod.mirror or pod.static or pod.deleting or _is_daemon(pod) or self._critical(pod):
            return False
        evictor = self.handle.evictor
        return evictor.filter(pod) and evictor.pre_eviction_filter(pod)

    def waiting_addons(self) -> list[PodInfo]:
        """Critical add-ons Unschedulable for long enough, most important first."""
        snapshot = self.handle.snapshot
        waiting = []
        for pod in snapshot.pending_pods:
            since = pod.extra.get(UNSCHEDULABLE_SINCE)
            if since is None or pod.deleting or pod.namespace not in self.args.system_namespaces:
                continue
            if not self._critical(pod) or snapshot.now - since < self.args.unschedulable_seconds:
                continue
            waiting.append(pod)
        return sorted(
            waiting, key=lambda p: (-self._priority(p), p.creation_timestamp, p.namespace, p.name)
        )

    def balance(self, nodes: Sequence[NodeInfo]) -> None:
        snapshot = self.handle.snapshot
        in_flight = rescues_in_flight(snapshot.taint_record, snapshot.now)
        busy: set[str] = set()
        for addon in self.waiting_addons():
            if rescue_value(addon.key) in in_flight:
                continue  # its rescue is under way; the runtime ends it
            taint = rescue_taint(addon.key).taint_json
            if not any(tolerates(toleration, taint) for toleration in addon.tolerations):
                log.warning(
                    "%s: critical add-on %s does not tolerate %s; not rescued",
                    NAME,
                    addon.key,
                    RESCUE_TAINT_KEY,
                )
                continue
            free_nodes = [node for node in nodes if node.name not in busy]
            options = choose_node(
                addon,
                free_nodes,
                snapshot.pods_on,
                snapshot.node_usage,
                self._removable,
                self._priority,
            )
            chosen = next((o for o in options if self.handle.evictor.would_allow(o.victims)), None)
            if chosen is None:
                log.info("%s: no node can make room for %s", NAME, addon.key)
                continue
            if not self._rescue(addon, chosen):
                return
            busy.add(chosen.node)

    def _rescue(self, addon: PodInfo, chosen: NodeOption) -> bool:
        """Plan the taint, then the evictions; ``False`` when a limit ends the plugin."""
        owned = rescue_taint(addon.key)
        victims = ", ".join(victim.key for victim in chosen.victims)
        self.handle.record_taint(
            TaintChange.of(
                owned,
                chosen.node,
                add=True,
                plugin=NAME,
                profile=self.handle.profile,
                reason=f"make room for critical add-on {addon.key} by evicting {victims}",
                for_pod=addon.key,
            )
        )
        reason = f"make room for critical add-on {addon.key}"
        for victim in chosen.victims:
            try:
                self.handle.evictor.evict(victim, NAME, reason)
            except EvictionLimitReached:  # would_allow said no limit is in the way
                return False
        return True
