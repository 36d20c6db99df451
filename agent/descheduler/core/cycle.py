"""One descheduling cycle, pure: a policy and a snapshot in, a ``Plan`` out.

Upstream's ``runProfiles`` (descheduler.go): take the nodes matching the policy's
``nodeSelector`` and keep the Ready ones (cordoned nodes stay in); with at most one, skip
("requires >=2 nodes"); run the Deschedule plugins of every profile, then the Balance
plugins of every profile, all sharing one evictor whose limits are checked Total -> PerNode
-> PerNamespace. A plugin that fails is logged, recorded in ``Plan.errors``, and the cycle
goes on with the others (the runtime then fails the cycle loudly).

The runtime supplies what is not pure: the snapshot (with its ``now``), the churn guard's
memory (``CycleOptions.owner_evictions``) and a monotonic clock for the per-plugin durations
(the ``descheduler_strategy_duration_seconds`` metric); without a clock durations are 0. The
process that calls it owns the interpreter, so it, not the planner, pauses the cyclic garbage
collector around a cycle (``live.runner.plan_cycle``, ``offline.command``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agent.descheduler.core.errors import DeschedulerError
from agent.descheduler.core.evictions.limits import EvictionLimits
from agent.descheduler.core.evictions.planner import Planner, ProfileEvictor
from agent.descheduler.core.framework.profile import Profile
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.framework.types import (
    BALANCE,
    DESCHEDULE,
    FILTER,
    PRE_EVICTION_FILTER,
    BalancePlugin,
    DeschedulePlugin,
    Evictor,
    EvictorPlugin,
)
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.model.cluster import ClusterSnapshot, NodeInfo
from agent.descheduler.plan.shape import Plan, TaintChange
from agent.kubesemantics.labelselector import matches, parse_selector

log = logging.getLogger(__name__)

TOO_FEW_NODES = "requires >=2 nodes"


@dataclass(frozen=True)
class CycleOptions:
    owner_evictions: Mapping[str, float] = field(default_factory=dict)
    """The churn guard's memory from earlier cycles (owner UID -> Unix seconds)."""
    apply_budgets: bool = True
    """Apply PDBs as the API server would; off only to reproduce upstream's dry run."""
    implicit_budgets: bool = True
    """Hold evictions beyond a workload's implicit budget, where no PDB selects the pod
    (``rules.rollouts``); ``--implicit-rollout-budgets=false`` turns it off."""
    monotonic: Callable[[], float] | None = None
    """Clock for the per-plugin durations; ``None`` reports 0."""


class CycleHandle:
    """The ``Handle`` one profile's plugins get."""

    def __init__(
        self, snapshot: ClusterSnapshot, nodes: Sequence[NodeInfo], plan: Plan, profile: str
    ) -> None:
        self._snapshot = snapshot
        self._nodes = nodes
        self._plan = plan
        self._profile = profile
        self._evictor: Evictor | None = None

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    @property
    def nodes(self) -> Sequence[NodeInfo]:
        return self._nodes

    @property
    def profile(self) -> str:
        return self._profile

    @property
    def evictor(self) -> Evictor:
        if self._evictor is None:  # pragma: no cover - set before any plugin runs
            raise DeschedulerError("the evictor is not ready")
        return self._evictor

    def attach(self, evictor: Evictor) -> None:
        self._evictor = evictor

    def record_node(self, facts: Mapping[str, Any]) -> None:
        self._plan.nodes.append(dict(facts))

    def record_taint(self, change: TaintChange) -> None:
        self._plan.taints.append(change)


def cycle_nodes(policy: DeschedulerPolicy, snapshot: ClusterSnapshot) -> list[NodeInfo]:
    """The policy's nodeSelector, Ready only, sorted by name."""
    selector = parse_selector(policy.node_selector)
    return sorted(
        (n for n in snapshot.nodes.values() if n.ready and matches(selector, n.labels)),
        key=lambda node: node.name,
    )


@dataclass
class _Built:
    profile: Profile
    handle: CycleHandle
    deschedule: list[DeschedulePlugin]
    balance: list[BalancePlugin]


def _build(profile: Profile, handle: CycleHandle, planner: Planner) -> _Built:
    instances: dict[str, Any] = {}

    def instance(name: str) -> Any:
        if name not in instances:
            instances[name] = REGISTRY[name].factory(profile.args[name], handle)
        return instances[name]

    filters = [cast(EvictorPlugin, instance(n)) for n in profile.plugins_at(FILTER)]
    pre = [cast(EvictorPlugin, instance(n)) for n in profile.plugins_at(PRE_EVICTION_FILTER)]
    handle.attach(ProfileEvictor(planner, profile.name, filters, pre))
    return _Built(
        profile=profile,
        handle=handle,
        deschedule=[cast(DeschedulePlugin, instance(n)) for n in profile.plugins_at(DESCHEDULE)],
        balance=[cast(BalancePlugin, instance(n)) for n in profile.plugins_at(BALANCE)],
    )


def run_cycle(
    policy: DeschedulerPolicy, snapshot: ClusterSnapshot, options: CycleOptions | None = None
) -> Plan:
    """Plan one cycle."""
    options = options or CycleOptions()
    limits = EvictionLimits(
        total=policy.max_no_of_pods_to_evict_total,
        per_node=policy.max_no_of_pods_to_evict_per_node,
        per_namespace=policy.max_no_of_pods_to_evict_per_namespace,
    )
    planner = Planner(
        snapshot,
        limits,
        owner_evictions=options.owner_evictions,
        apply_budgets=options.apply_budgets,
        implicit_budgets=options.implicit_budgets,
    )
    plan = planner.plan
    nodes = cycle_nodes(policy, snapshot)
    skipped = len(nodes) <= 1
    if skipped:
        log.info("Skipping descheduling cycle: %s", TOO_FEW_NODES)
        plan.skipped = TOO_FEW_NODES
    built: list[_Built] = []
    for profile in policy.profiles:
        handle = CycleHandle(snapshot, nodes, plan, profile.name)
        try:
            built.append(_build(profile, handle, planner))
        except DeschedulerError as error:
            log.error("profile %s: cannot build its plugins: %s", profile.name, error)  # noqa: TRY400 - an expected failure, reported without a traceback
            plan.errors.append(f"profile {profile.name}: {error}")
    for point in (DESCHEDULE, BALANCE):
        for each in built:
            plugins: Sequence[Any] = each.deschedule if point == DESCHEDULE else each.balance
            for plugin in plugins:
                # Upstream's skip, except for a plugin about nodes that are not Ready (ours:
                # NodeShutdownRecovery), which a cluster down to one Ready node needs most.
                if skipped and not getattr(plugin, "runs_without_ready_nodes", False):
                    continue
                _run(plugin, point, each.profile.name, nodes, plan, options)
    if skipped:
        return plan
    _forget_past_cooldowns(policy, snapshot, plan)
    return plan


def _forget_past_cooldowns(
    policy: DeschedulerPolicy, snapshot: ClusterSnapshot, plan: Plan
) -> None:
    """Keep the churn memory as small as the longest cooldown needs (the runtime stores it
    on a Lease); with the guard off everywhere only this cycle's evictions are kept."""
    horizon = max(
        (
            float(getattr(args, "cooldown_seconds", 0.0))
            for profile in policy.profiles
            for args in profile.args.values()
        ),
        default=0.0,
    )
    plan.owner_evictions = {
        uid: when
        for uid, when in plan.owner_evictions.items()
        if snapshot.now - when < horizon or when >= snapshot.now
    }


def _run(  # noqa: PLR0917 - one call site, every argument named there
    plugin: Any,
    point: str,
    profile: str,
    nodes: Sequence[NodeInfo],
    plan: Plan,
    options: CycleOptions,
) -> None:
    clock = options.monotonic
    started = clock() if clock else 0.0
    try:
        if point == DESCHEDULE:
            plugin.deschedule(nodes)
        else:
            plugin.balance(nodes)
    except Exception as error:
        # Upstream logs a plugin's error status and goes on with the next plugin; a bug in
        # one plugin must not stop the others, so this catches everything and says where.
        # The plan records it: the runtime fails the cycle loudly (exit 1 offline; live, the
        # cycle's outcome and a Warning Event). The traceback is for whoever debugs it.
        log.error(  # noqa: TRY400 - the traceback follows at debug level
            "profile %s: plugin %s failed: %s: %s",
            profile,
            plugin.name,
            type(error).__name__,
            error,
        )
        log.debug("profile %s: plugin %s failed", profile, plugin.name, exc_info=True)
        plan.errors.append(
            f"profile {profile}: plugin {plugin.name}: {type(error).__name__}: {error}"
        )
    plan.durations.append(
        {
            "profile": profile,
            "plugin": plugin.name,
            "extensionPoint": point,
            "seconds": (clock() - started) if clock else 0.0,
        }
    )
