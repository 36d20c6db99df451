"""What a cycle decided, in the order it decided it: the one plan shape this product prints.

The live loop, ``--dry-run`` and the offline plan all run the same cycle and get a ``Plan``;
only what happens to it differs (sent through the eviction API, printed, or both). Its JSON
form is a stable interface, documented in docs/plan.md::

    {"evictions": [{"pod": "<namespace>/<name>", "node": "...", "plugin": "...",
                    "profile": "...", "reason": "...", "blockedByPDB": false,
                    "implicitBudget": null, "held": false, "destination": null,
                    "destinationCandidates": []}],
     "nodes": [...], "summary": {...}}

plus ``"taints": [...]`` when a plugin asked for taints of ours (added, never changed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.kubesemantics.taintownership import OwnedTaint


def implicit_key(kind: str, namespace: str, name: str) -> str:
    """``<Kind> <namespace>/<name>``: an implicit budget's key. A PodDisruptionBudget's key is
    ``namespace/name``, which holds no space, so the two never collide."""
    return f"{kind} {namespace}/{name}"


def is_implicit_key(key: str) -> bool:
    return " " in key


@dataclass(frozen=True, slots=True)
class ImplicitBudget:
    """A workload without a PodDisruptionBudget, as its implicit budget counts it: no more of
    its pods unavailable at once than ``max_unavailable`` (``core.rules.rollouts``).

    The live loop lets a held eviction of it go while its Ready pods (of ``members``, those
    it evicted not counted) exceed ``desired - max_unavailable``: what a PDB with that
    ``maxUnavailable`` would allow."""

    key: str
    """``<Kind> <namespace>/<name>`` of the workload (a Deployment, not its ReplicaSets)."""
    desired: int
    """Its replicas (with ``fallback``, the pods of it the snapshot holds)."""
    max_unavailable: int
    """How many of its pods may be unavailable at once (at least 1)."""
    members: frozenset[str]
    """UIDs of the controllers whose pods count: the workload's own, or its ReplicaSets'."""
    fallback: bool = False
    """The workload itself was not in the snapshot: ``desired`` is the pods seen of its
    controller, and the rollout's settings are the kind's defaults."""

    def allows(self, healthy: int) -> int:
        """Disruptions allowed with ``healthy`` Ready pods (a PDB's ``disruptionsAllowed``:
        ``maxUnavailable - (desired - healthy)``, never below 0)."""
        return max(0, self.max_unavailable - (self.desired - healthy))


def above_target(usage: Mapping[str, int], target: Mapping[str, int]) -> bool:
    """Upstream's ``isNodeAboveTargetUtilization``: above the target on any resource."""
    return any(target.get(name, 0) < used for name, used in usage.items())


@dataclass(frozen=True, slots=True, eq=False)
class NodeTarget:
    """A node LowNodeUtilization drains to its target, as the plan found it: what a held
    eviction from it is checked against when its budget releases it.

    LowNodeUtilization evicts from a node only while it is above its target, counting what it
    evicted from it so far; a held eviction goes seconds later, when the cycle's other
    evictions (those sent at once, other plugins' too) may have taken the node below its
    target already: sent then, its replacement would be free to land straight back. So it
    goes only while the node, less what has left it since the plan, is still above target;
    else it is dropped, as upstream's loop stops at a node no longer above target, and the
    next cycle looks again. Arrivals are not counted, as the plugin's own loop counts none."""

    node: str
    usage: Mapping[str, int]
    """The node's usage when the plan was made, before any of the cycle's evictions."""
    target: Mapping[str, int]
    """Its usage at the target thresholds (the plugin's ``available``)."""
    pods: Mapping[str, Mapping[str, int]]
    """Pod UID -> its usage, as the plugin weighs it, for every pod its usage counts."""

    def over(self, gone: Collection[str]) -> bool:
        """Whether the node is still above its target with the pods ``gone`` (UIDs) off it."""
        usage = dict(self.usage)
        for uid in gone:
            pod = self.pods.get(uid)
            if pod is not None:
                for name in usage:
                    usage[name] -= pod.get(name, 0)
        return above_target(usage, self.target)


@dataclass(frozen=True, slots=True)
class PlannedEviction:
    namespace: str
    name: str
    uid: str
    node: str
    plugin: str
    profile: str
    reason: str
    blocked_by_pdb: str = ""
    """``namespace/name`` of the PodDisruptionBudget that forbids it now; empty when allowed.
    A blocked eviction is listed (so the dry run tells the truth) and is never sent as such;
    a ``held`` one goes once the budget allows it."""
    held: bool = False
    """Blocked, and the live loop sends it once the budget allows (within the cycle): its
    plugin's reason belongs to the pod, so it still holds after the cycle's other evictions.
    A blocked eviction that is not held (LowNodeUtilization's: its reason, a node over its
    target, goes as the other evictions drain it) is left to the next cycle, and its plugin
    went on to another pod, as upstream does on a refusal."""
    destination: str | None = None
    """Where the pod would land, when the planner simulated placement; else ``None``."""
    candidates: tuple[str, ...] = ()
    """Every node the replacement may land on (``destination`` is one): tied at the best
    score where the plan places it, or where it would be placed ahead of the evictions in
    flight with it; the scheduler picks among ties at random."""
    budget: str = ""
    """``namespace/name`` of the PodDisruptionBudget selecting the pod (the first, if
    several), or the key of its implicit budget when none does, allowed or not: the live loop
    sends a budget's held evictions only after its allowed ones were answered. Not part of
    the JSON shape."""
    implicit_budget: str = ""
    """The key of the workload's implicit budget (``ImplicitBudget``) when it holds the
    eviction now (the pod has no PDB, and its workload has as many pods unavailable as its
    rollout allows); empty otherwise. Always ``held``: an implicit budget changes when a pod
    goes, never which pods go."""

    while_over: NodeTarget | None = field(default=None, compare=False)
    """Set on a held eviction whose reason is its node being above target
    (LowNodeUtilization's): the live loop sends it, when its budget releases it, only while
    ``while_over.over`` still says so, and drops it otherwise. Not part of the JSON shape."""

    @property
    def hold_key(self) -> str:
        """The budget the live loop waits on for a held eviction: its PDB or implicit one."""
        return self.blocked_by_pdb or self.implicit_budget

    @property
    def pod(self) -> str:
        return f"{self.namespace}/{self.name}"

    def as_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "node": self.node,
            "plugin": self.plugin,
            "profile": self.profile,
            "reason": self.reason,
            "blockedByPDB": bool(self.blocked_by_pdb),
            "implicitBudget": self.implicit_budget or None,
            "held": self.held,
            "destination": self.destination,
            "destinationCandidates": list(self.candidates),
        }


@dataclass(frozen=True, slots=True)
class TaintChange:
    """A taint of ours a plugin wants on a node (``add``) or off it (``remove``).

    The runtime applies these before it sends any eviction, so a node a rescue chose is
    tainted before its pods go. ``for_pod`` names the critical add-on a rescue taint is for.
    """

    node: str
    key: str
    value: str
    effect: str
    add: bool
    plugin: str
    profile: str
    reason: str
    for_pod: str = ""

    @classmethod
    def of(
        cls,
        owned: OwnedTaint,
        node: str,
        *,
        add: bool,
        plugin: str,
        profile: str,
        reason: str,
        for_pod: str = "",
    ) -> TaintChange:
        """The change that adds or removes one of our taints on ``node``."""
        return cls(
            node=node,
            key=owned.key,
            value=owned.value,
            effect=owned.effect,
            add=add,
            plugin=plugin,
            profile=profile,
            reason=reason,
            for_pod=for_pod,
        )

    @property
    def taint(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"

    def as_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "taint": self.taint,
            "action": "add" if self.add else "remove",
            "plugin": self.plugin,
            "profile": self.profile,
            "reason": self.reason,
        }


@dataclass
class Plan:
    evictions: list[PlannedEviction] = field(default_factory=list)
    nodes: list[Mapping[str, Any]] = field(default_factory=list)
    """Per-node facts the plugins logged (classification, usage %), as JSON-ready dicts."""
    skipped: str = ""
    """Why the cycle did nothing (e.g. "requires >=2 nodes"); empty when it ran."""
    durations: list[Mapping[str, Any]] = field(default_factory=list)
    """One ``{"profile", "plugin", "extensionPoint", "seconds"}`` per plugin run, in run order
    (the runtime's ``descheduler_strategy_duration_seconds``); not part of the JSON shape."""
    limit_refusals: list[Mapping[str, str]] = field(default_factory=list)
    """Evictions a limit refused, as ``{"result", "strategy", "profile", "namespace",
    "node"}``: upstream counts them in ``descheduler_pods_evicted_total`` with the limit's
    text as ``result``; not part of the JSON shape."""
    errors: list[str] = field(default_factory=list)
    """Plugin failures the cycle logged and went past, as upstream does."""
    taints: list[TaintChange] = field(default_factory=list)
    """Taints of ours to add or remove (CriticalAddonRescue, NodeShutdownRecovery), in the
    order decided; in the JSON shape as ``taints`` only when there are any."""
    implicit_budgets: dict[str, ImplicitBudget] = field(default_factory=dict)
    """By key: the implicit budget of every workload an eviction of the plan belongs to
    (allowed or held), for the live loop to count its Ready pods; not part of the JSON
    shape."""
    owner_evictions: dict[str, float] = field(default_factory=dict)
    """Owner UID -> Unix seconds of its last pod evicted by us, this cycle's evictions included:
    the churn guard's memory, for the runtime to persist and hand to the next cycle. Entries
    older than the policy's longest ``cooldownSeconds`` are dropped."""

    @property
    def allowed(self) -> list[PlannedEviction]:
        """What no PDB blocks: the cycle's decisions, sent at once or, those an implicit
        budget holds, once their workload's replacements are Ready."""
        return [eviction for eviction in self.evictions if not eviction.blocked_by_pdb]

    @property
    def at_once(self) -> list[PlannedEviction]:
        """Sent at once: neither a PDB nor an implicit budget holds them."""
        return [e for e in self.evictions if not (e.blocked_by_pdb or e.implicit_budget)]

    @property
    def held(self) -> list[PlannedEviction]:
        """Blocked now (by a PDB or an implicit budget), sent once their budget allows."""
        return [eviction for eviction in self.evictions if eviction.held]

    @property
    def fallbacks(self) -> list[str]:
        """Keys of the implicit budgets whose workload was not in the snapshot."""
        return sorted(key for key, budget in self.implicit_budgets.items() if budget.fallback)

    @property
    def refused(self) -> list[PlannedEviction]:
        """Blocked now, and left to the next cycle."""
        return [e for e in self.evictions if e.blocked_by_pdb and not e.held]

    def summary(self) -> dict[str, Any]:
        by_plugin: dict[str, int] = {}
        for eviction in self.allowed:
            by_plugin[eviction.plugin] = by_plugin.get(eviction.plugin, 0) + 1
        return {
            "planned": len(self.evictions),
            "allowed": len(self.allowed),
            "blockedByPDB": len(self.evictions) - len(self.allowed),
            "held": len(self.held),
            "heldByImplicitBudget": sum(1 for e in self.evictions if e.implicit_budget),
            "byPlugin": dict(sorted(by_plugin.items())),
            "skipped": self.skipped or None,
        }

    def as_json(self) -> dict[str, Any]:
        shape: dict[str, Any] = {
            "evictions": [eviction.as_json() for eviction in self.evictions],
            "nodes": list(self.nodes),
            "summary": self.summary(),
        }
        if self.taints:
            shape["taints"] = [change.as_json() for change in self.taints]
        return shape
