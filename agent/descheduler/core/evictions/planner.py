"""The recording evictor: what plugins call to evict, and what records the plan.

One ``Planner`` per cycle, shared by every profile (upstream shares one ``PodEvictor``). It
checks the limits when an eviction is planned, applies PodDisruptionBudgets the way the
eviction subresource does, and appends a ``PlannedEviction`` in decision order. The live
runtime sends the plan's allowed evictions afterwards; the dry run prints it; tests read it.
It is product code, and the tests use it as it is.

PDBs, as the API server applies them (``pkg/registry/core/pod/storage/eviction.go``):
- a pod that is not Running (Pending, Succeeded, Failed) is evicted without a budget check;
- more than one budget selecting the pod refuses the eviction;
- a Running but unready pod: ``AlwaysAllow`` lets it go; ``IfHealthyBudget`` (the default)
  only while the budget is healthy (``currentHealthy >= desiredHealthy``; without those in
  the status, while ``disruptionsAllowed > 0``), and it does not use up the budget;
- a Running and Ready pod needs ``disruptionsAllowed > 0``, decremented as the cycle goes.

An eviction a budget refuses *now* is recorded with ``blocked_by_pdb`` (what the dry run and
the offline plan say of it), and then one of two things:

- **held** (the default): counted against the limits like any other and reported to the
  plugin as made, so the plugin does not reach for another pod in its place. The live loop
  sends it as soon as the budget's status allows, within the cycle (``live.evictor``); what is
  still refused at the cycle's end is reported so. Upstream sends every eviction it decides
  on, one by one, and the API server admits those whose budget has recovered by the time they
  arrive (a replacement turns Ready within seconds): a held eviction is that, without the
  429s, and without a substitute evicted in its place as well. It suits a plugin whose reason
  belongs to the pod (a duplicate, a taint, an affinity), which still holds after the cycle's
  other evictions.
- **refused** (``hold=False``, LowNodeUtilization's): reported to the plugin as not made,
  so it goes on to the next pod, exactly as upstream's does on the API server's 429, and left
  to the next cycle. Its reason is a node over its target, and by the time the budget
  allows, the cycle's other evictions have drained it: a node drained to its target
  meanwhile would get the replacement straight back.

**Implicit budgets** (``rules.rollouts``, on unless ``implicit_budgets`` is off): a Running and
Ready pod that no PDB selects counts against its workload's implicit budget, which allows
what its rollout's ``maxUnavailable`` allows. One it refuses now is always held, whatever the
plugin's ``hold``: an implicit budget changes when a pod goes, never which pods go, so the
plan's decisions (and upstream parity) stay as they are without it. A pod that is not Running
and Ready costs it nothing (it is unavailable already), as under ``AlwaysAllow``. A held
eviction whose reason is its node being above target (``while_over``, LowNodeUtilization's)
keeps that node's figures, so the live loop sends it only if the node still needs it then.

Pods evicted earlier in the cycle look terminating to later filters: against a real API
server the eviction sets ``deletionTimestamp`` at once and the informer catches up long before
the next plugin runs (upstream's run on the parity state took a minute).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.descheduler.core.errors import EvictionLimitReached
from agent.descheduler.core.evictions.limits import EvictionLimits
from agent.descheduler.core.framework.types import EvictorPlugin
from agent.descheduler.core.rules.budgets import BudgetIndex
from agent.descheduler.core.rules.rollouts import Rollouts
from agent.descheduler.model.cluster import ClusterSnapshot, DisruptionBudget, PodInfo
from agent.descheduler.plan.shape import ImplicitBudget, NodeTarget, Plan, PlannedEviction
from agent.kubesemantics.wellknown import RUNNING


def owner_uid(pod: PodInfo) -> str:
    """The controller's UID, else the first owner's; ``""`` for a bare pod."""
    for owner in pod.owners:  # ``pod.controller``, without a generator per eviction
        if owner.controller:
            return owner.uid
    return pod.owners[0].uid if pod.owners else ""


class Planner:
    def __init__(
        self,
        snapshot: ClusterSnapshot,
        limits: EvictionLimits,
        *,
        owner_evictions: Mapping[str, float] | None = None,
        apply_budgets: bool = True,
        implicit_budgets: bool = True,
    ) -> None:
        self.snapshot = snapshot
        self.limits = limits
        self.apply_budgets = apply_budgets
        self.rollouts = Rollouts(snapshot)
        """The workloads' implicit budgets; the eviction order reads their shares too."""
        self.implicit_budgets = implicit_budgets
        self._implicit_left: dict[str, int] = {}
        self.plan = Plan(owner_evictions=dict(owner_evictions or {}))
        self.evicted: set[str] = set()
        """UIDs of the pods this cycle evicted (allowed, not blocked)."""
        self._remaining: dict[str, int] = {}
        self._budgets = BudgetIndex(snapshot)
        self._keys: dict[int, str] = {}
        """Budget ``namespace/name`` by ``id``: the snapshot keeps every budget alive for as
        long as this planner, so no id is reused meanwhile."""

    def evict(
        self,
        pod: PodInfo,
        *,
        plugin: str,
        profile: str,
        reason: str = "",
        hold: bool = True,
        while_over: NodeTarget | None = None,
    ) -> bool:
        """Plan one eviction; ``False`` when a PDB refuses it now and ``hold`` is off (it is
        recorded as refused), else ``True`` (held when a PDB refuses it now). A held one
        keeps ``while_over``, for the live loop to check when it is released. Raises the
        limit errors."""
        try:
            self.limits.check(pod)
        except EvictionLimitReached as refused:
            self.plan.limit_refusals.append(
                {
                    "result": str(refused),
                    "strategy": plugin,
                    "profile": profile,
                    "namespace": pod.namespace,
                    "node": pod.node_name,
                }
            )
            raise
        budgets = self._budgets.budgets_for(pod) if self.apply_budgets else []
        budget = self._key(budgets[0]) if budgets else ""
        blocked = self._blocking(pod, budgets, budget) if budgets else ""
        implicit = ""
        if (
            not budgets
            and self.implicit_budgets
            and pod.phase == RUNNING
            and pod.ready
            and (rollout := self.rollouts.of(pod))
        ):
            budget = rollout.key
            self.plan.implicit_budgets[budget] = rollout
            implicit = self._implicit_blocking(rollout)
        held = (bool(blocked) and hold) or bool(implicit)
        self.plan.evictions.append(
            PlannedEviction(
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.uid,
                node=pod.node_name,
                plugin=plugin,
                profile=profile,
                reason=reason or plugin,
                blocked_by_pdb=blocked,
                held=held,
                budget=budget,
                implicit_budget=implicit,
                while_over=while_over if held else None,
            )
        )
        if blocked and not hold:
            return False  # refused: not counted, not remembered, the plugin moves on
        self.limits.record(pod)
        self.evicted.add(pod.uid)
        if uid := owner_uid(pod):
            self.plan.owner_evictions[uid] = self.snapshot.now
        return True

    def would_allow(self, pods: Sequence[PodInfo]) -> bool:
        """Whether evicting all of ``pods`` now passes every limit and PDB; records nothing.
        Implicit budgets are not asked: they only delay an eviction, never refuse one."""
        limits = self.limits
        saved = (
            limits.evicted_total,
            limits.evicted_by_node.copy(),
            limits.evicted_by_namespace.copy(),
            dict(self._remaining),
        )
        try:
            for pod in pods:
                limits.check(pod)
                if self.apply_budgets and self._blocking_budget(pod):
                    return False
                limits.record(pod)
        except EvictionLimitReached:
            return False
        finally:
            (
                limits.evicted_total,
                limits.evicted_by_node,
                limits.evicted_by_namespace,
                self._remaining,
            ) = saved
        return True

    def in_cooldown(self, pod: PodInfo, seconds: float) -> bool:
        uid = owner_uid(pod)
        last = self.plan.owner_evictions.get(uid) if uid else None
        return last is not None and self.snapshot.now - last < seconds

    def _key(self, budget: DisruptionBudget) -> str:
        """``namespace/name``, made once per budget of the cycle (not once per eviction)."""
        key = self._keys.get(id(budget))
        if key is None:
            key = self._keys[id(budget)] = f"{budget.namespace}/{budget.name}"
        return key

    def _blocking_budget(self, pod: PodInfo) -> str:
        budgets = self._budgets.budgets_for(pod)
        return self._blocking(pod, budgets, self._key(budgets[0])) if budgets else ""

    def _implicit_blocking(self, rollout: ImplicitBudget) -> str:
        """The implicit budget's key when it holds the eviction of one of its Running, Ready
        pods now, else ``""``. A pod that is not Running and Ready is not asked: unavailable
        already, its eviction costs the workload nothing (nor the cycle a pass over the
        pods, on a state of Pending pods such as the parity one)."""
        key = rollout.key
        remaining = self._implicit_left.get(key)
        if remaining is None:
            remaining = self.rollouts.allowed(rollout)
        if remaining <= 0:
            self._implicit_left[key] = 0
            return key
        self._implicit_left[key] = remaining - 1
        return ""

    def _blocking(self, pod: PodInfo, budgets: Sequence[DisruptionBudget], key: str) -> str:
        """``key`` (the first budget's) when the budgets refuse the eviction now, else ``""``."""
        if pod.phase != RUNNING:
            return ""
        if len(budgets) > 1:
            return key  # "This pod has more than one PodDisruptionBudget": refused
        budget = budgets[0]
        remaining = self._remaining.get(key, budget.disruptions_allowed)
        if not pod.ready:
            if budget.unhealthy_pod_eviction_policy == "AlwaysAllow":
                return ""
            if budget.current_healthy is not None and budget.desired_healthy is not None:
                healthy = budget.current_healthy >= budget.desired_healthy
            else:
                healthy = remaining > 0
            return "" if healthy else key
        if remaining <= 0:
            return key
        self._remaining[key] = remaining - 1
        return ""


class ProfileEvictor:
    """The ``Evictor`` a profile's plugins see: its filters in front of the shared planner."""

    def __init__(
        self,
        planner: Planner,
        profile: str,
        filters: Sequence[EvictorPlugin],
        pre_eviction_filters: Sequence[EvictorPlugin],
    ) -> None:
        self.planner = planner
        self.profile = profile
        self.filters = filters
        self.pre_eviction_filters = pre_eviction_filters
        # Verdicts by pod UID. Every input of the filters is fixed for the cycle (one
        # snapshot), and the plugins ask about the same pods again and again (LowNodeUtilization
        # per source node, RemoveDuplicates per node and again before each eviction). The one
        # input that moves, "evicted earlier in this cycle", is checked before the memo. A
        # ProfileEvictor is built per cycle, so the memo never outlives its snapshot.
        self._filtered: dict[str, bool] = {}
        self._pre_filtered: dict[str, bool] = {}

    def filter(self, pod: PodInfo) -> bool:
        if pod.uid in self.planner.evicted:
            return False  # terminating by now, as the informer would show it
        verdict = self._filtered.get(pod.uid)
        if verdict is None:
            verdict = self._filtered[pod.uid] = all(plugin.filter(pod) for plugin in self.filters)
        return verdict

    def pre_eviction_filter(self, pod: PodInfo) -> bool:
        verdict = self._pre_filtered.get(pod.uid)
        if verdict is None:
            verdict = self._pre_filtered[pod.uid] = all(
                plugin.pre_eviction_filter(pod) for plugin in self.pre_eviction_filters
            )
        return verdict

    def evict(
        self,
        pod: PodInfo,
        plugin: str,
        reason: str = "",
        *,
        hold: bool = True,
        while_over: NodeTarget | None = None,
    ) -> bool:
        return self.planner.evict(
            pod,
            plugin=plugin,
            profile=self.profile,
            reason=reason,
            hold=hold,
            while_over=while_over,
        )

    def in_cooldown(self, pod: PodInfo, seconds: float) -> bool:
        return self.planner.in_cooldown(pod, seconds)

    def would_allow(self, pods: Sequence[PodInfo]) -> bool:
        return self.planner.would_allow(pods)

    def rollout_of(self, pod: PodInfo) -> ImplicitBudget | None:
        return self.planner.rollouts.of(pod)
