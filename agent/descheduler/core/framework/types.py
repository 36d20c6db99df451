"""The small interfaces between plugins, the evictor and the cycle (upstream ``types.go``).

A plugin sees the cluster only through a ``Handle``: the cycle's snapshot, the Ready nodes of
the cycle and the evictor. It never calls the API and never counts evictions: it asks
``handle.evictor`` and reacts to ``NodeLimitReached``/``TotalLimitReached`` the way upstream's
plugins react to ``EvictionNodeLimitError``/``EvictionTotalLimitError``.

Where we differ on purpose: plugins are built per cycle (``PluginFactory(args, handle)``), not
once per process, because the handle carries the cycle's snapshot; building one is cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from agent.descheduler.model.cluster import ClusterSnapshot, NodeInfo, PodInfo
from agent.descheduler.plan.shape import ImplicitBudget, NodeTarget, TaintChange

PRESORT = "presort"
SORT = "sort"
DESCHEDULE = "deschedule"
BALANCE = "balance"
FILTER = "filter"
PRE_EVICTION_FILTER = "preEvictionFilter"
EXTENSION_POINTS = (PRESORT, SORT, DESCHEDULE, BALANCE, FILTER, PRE_EVICTION_FILTER)
"""In upstream's order; ``preEvictionFilter`` is spelled ``preevictionfilter`` in the YAML."""


class Evictor(Protocol):
    """What plugins call: the profile's filters and the shared planner behind them."""

    def filter(self, pod: PodInfo) -> bool:
        """Every enabled ``filter`` plugin accepts the pod (DefaultEvictor among them)."""
        ...

    def pre_eviction_filter(self, pod: PodInfo) -> bool:
        """Every enabled ``preEvictionFilter`` plugin accepts the pod."""
        ...

    def evict(
        self,
        pod: PodInfo,
        plugin: str,
        reason: str = "",
        *,
        hold: bool = True,
        while_over: NodeTarget | None = None,
    ) -> bool:
        """Plan the eviction. When a PDB forbids it now it is recorded as blocked, and then
        either held (``hold``: sent once the budget allows; ``True`` is returned, as if made)
        or refused (``False``: the plugin goes on without it). ``while_over``: the pod goes
        to take its node below target, so if it is held, it goes only while the node still
        needs it when released (``NodeTarget``).

        Raises ``TotalLimitReached``, ``NodeLimitReached`` or ``NamespaceLimitReached``
        (checked in that order) when a limit refuses it; nothing is recorded then.
        """
        ...

    def in_cooldown(self, pod: PodInfo, seconds: float) -> bool:
        """The pod's owner lost a pod to us less than ``seconds`` ago (the churn guard)."""
        ...

    def would_allow(self, pods: Sequence[PodInfo]) -> bool:
        """Evicting all of ``pods`` now would pass every limit and PDB (nothing recorded)."""
        ...

    def rollout_of(self, pod: PodInfo) -> ImplicitBudget | None:
        """The implicit budget of the pod's workload (``rules.rollouts``), whether or not
        implicit budgets are applied; ``None`` for a pod without one."""
        ...


class Handle(Protocol):
    @property
    def snapshot(self) -> ClusterSnapshot: ...

    @property
    def nodes(self) -> Sequence[NodeInfo]:
        """The cycle's nodes: the policy's nodeSelector, Ready only, sorted by name."""
        ...

    @property
    def evictor(self) -> Evictor: ...

    @property
    def profile(self) -> str: ...

    def record_node(self, facts: Mapping[str, Any]) -> None:
        """Add a per-node fact (classification, usage) to the plan's ``nodes``."""
        ...

    def record_taint(self, change: TaintChange) -> None:
        """Ask the runtime to add or remove a taint of ours (applied before evictions)."""
        ...


class Plugin(Protocol):
    name: str


class DeschedulePlugin(Plugin, Protocol):
    def deschedule(self, nodes: Sequence[NodeInfo]) -> None: ...


class BalancePlugin(Plugin, Protocol):
    def balance(self, nodes: Sequence[NodeInfo]) -> None: ...


class EvictorPlugin(Plugin, Protocol):
    def filter(self, pod: PodInfo) -> bool: ...

    def pre_eviction_filter(self, pod: PodInfo) -> bool: ...


PluginFactory = Callable[[Any, Handle], Plugin]
"""Builds a plugin for one cycle from its validated args and the cycle's handle."""
