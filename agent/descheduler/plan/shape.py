"""What a cycle decided, in the order it decided it: the one plan shape this product prints.

The live loop, ``--dry-run`` and the offline plan all run the same cycle and get a ``Plan``;
only what happens to it differs (sent through the eviction API, printed, or both). Its JSON
form is a stable interface, documented in docs/plan.md::

    {"evictions": [{"pod": "<namespace>/<name>", "node": "...", "plugin": "...",
                    "profile": "...", "reason": "...", "blockedByPDB": false,
                    "held": false, "destination": null, "destinationCandidates": []}],
     "nodes": [...], "summary": {...}}

plus ``"taints": [...]`` when a plugin asked for taints of ours (added, never changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.kube.taintownership import OwnedTaint


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
    several), allowed or not: the live loop sends a budget's held evictions only after its
    allowed ones were answered. Not part of the JSON shape."""

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
    owner_evictions: dict[str, float] = field(default_factory=dict)
    """Owner UID -> Unix seconds of its last pod evicted by us, this cycle's evictions included:
    the churn guard's memory, for the runtime to persist and hand to the next cycle. Entries
    older than the policy's longest ``cooldownSeconds`` are dropped."""

    @property
    def allowed(self) -> list[PlannedEviction]:
        return [eviction for eviction in self.evictions if not eviction.blocked_by_pdb]

    @property
    def held(self) -> list[PlannedEviction]:
        """Blocked now, sent once their budget allows."""
        return [eviction for eviction in self.evictions if eviction.held]

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
