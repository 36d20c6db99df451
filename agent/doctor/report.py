"""Turning node facts and the config into rows and warnings (pure: no I/O here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.config import AgentConfig
from agent.config.durations import format_duration
from agent.config.shutdown import budget_seconds
from agent.config.swap import LIMITED_SWAP
from agent.logind.dropin_order import Override
from agent.logind.facts import LogindFacts, kubelet_shutdown_delay_locks
from agent.logind.manager import USEC_PER_SECOND
from agent.node.cgroups import LIMITED_SWAP_NEEDS_V2, CgroupFacts
from agent.node.facts import NodeFacts
from agent.node.kubepods import KubepodsRoot


@dataclass(frozen=True)
class ClusterStatus:
    mode: str  # "node-only", "reachable", "unreachable", "misconfigured"
    detail: str
    credentials: str = ""
    """Whose token the agent sends and which node it is bound to (empty: not connected)."""
    credential_problem: str | None = None
    """Why the own-node admission policy will deny the agent's writes, if it will."""


@dataclass(frozen=True)
class DoctorReport:
    sections: dict[str, dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"sections": self.sections, "warnings": self.warnings}


def build_report(
    config: AgentConfig,
    node_name: str,
    facts: NodeFacts,
    logind: LogindFacts,
    cluster: ClusterStatus,
    *,
    dropin_overrides: Sequence[Override] = (),
    kubepods: KubepodsRoot | None = None,
) -> DoctorReport:
    """``kubepods``: where the one cgroup finder found the tree (``None``: nowhere)."""
    memory, cgroups, kernel, noswap = facts.memory, facts.cgroups, facts.kernel, facts.tmpfs_noswap
    budget = budget_seconds(config.shutdown_buckets)
    sections: dict[str, dict[str, Any]] = {
        "node": {
            "name": node_name,
            "kernel": kernel.release,
            "boot_id": kernel.boot_id,
            "in_user_namespace": kernel.in_user_namespace,
            "memory_total_bytes": memory.memory_total_bytes,
            "vm_min_free_kbytes": kernel.min_free_kbytes,
        },
        "swap": {
            "on": memory.swap_on,
            "total_bytes": memory.swap_total_bytes,
            "used_bytes": memory.swap_used_bytes,
            "free_bytes": memory.swap_free_bytes,
            "devices": [
                {
                    "filename": d.filename,
                    "type": d.kind,
                    "size_bytes": d.size_bytes,
                    "used_bytes": d.used_bytes,
                    "priority": d.priority,
                }
                for d in memory.swap_devices
            ],
            "tmpfs_noswap_supported": noswap.supported,
            "tmpfs_noswap_reason": noswap.reason,
        },
        "cgroups": {
            "mode": cgroups.mode.value,
            "limited_swap": cgroups.limited_swap,
            "swap_controller": cgroups.swap_controller_line(),
            "memsw_accounting": cgroups.memsw_accounting,
            "kubepods": kubepods.describe() if kubepods is not None else "not found",
            "own_cgroup": cgroups.own_cgroup,
        },
        "logind": {
            "present": logind.present,
            "inhibit_delay_max_usec": logind.inhibit_delay_max_usec,
            "detail": logind.detail,
        },
        "config": {
            "shutdown_budget_seconds": budget,
            "shutdown_buckets": [
                {
                    "priority": b.priority,
                    "shutdownGracePeriodSeconds": b.shutdown_grace_period_seconds,
                }
                for b in config.shutdown_buckets
            ],
            "shutdown_mode": config.shutdown.mode,
            "swap_behavior": config.memory_swap.swap_behavior,
            "swap_enforce": config.memory_swap.enforce,
            "readiness_gate": config.readiness.enabled,
            "metrics_bind_address": config.metrics_bind_address,
        },
        "cluster": {
            "mode": cluster.mode,
            "detail": cluster.detail,
            **({"credentials": cluster.credentials} if cluster.credentials else {}),
        },
    }
    warnings = []
    if memory.swap_on and not noswap.supported:
        warnings.append(
            "swap is on but tmpfs noswap is unsupported: memory-backed volumes may reach disk"
        )
    limited = config.memory_swap.swap_behavior == LIMITED_SWAP
    v1 = cgroups.v1 or (kubepods is not None and kubepods.version == 1)
    if v1:
        warnings.append(cgroup_v1_warning(cgroups, swap_on=memory.swap_on, limited=limited))
    elif memory.swap_on and not cgroups.v2:
        warnings.append(
            f"swap is on but cgroups are {cgroups.mode.value}: Kubernetes supports swap "
            "only on cgroup v2, so pods cannot be limited"
        )
    if limited:
        if not memory.swap_on:
            warnings.append("memorySwap.swapBehavior is LimitedSwap but swap is off")
        if not v1 and not cgroups.limited_swap:
            warnings.append(
                "memorySwap.swapBehavior is LimitedSwap but cgroup v2 with the swap "
                "controller is missing: every container gets no swap"
            )
    warnings += _shutdown_readiness_warnings(budget, logind)
    if budget > 0 and logind.inhibit_delay_max_usec is not None:
        delay = logind.inhibit_delay_max_usec / USEC_PER_SECOND
        if delay < budget:
            action = (
                f"the agent will raise it with {config.shutdown.logind_drop_in_path}"
                if config.shutdown.manage_logind_delay
                else "raise InhibitDelayMaxSec, shutdown.manageLogindDelay is off"
            )
            warnings.append(
                f"logind InhibitDelayMaxSec is {format_duration(delay)}, below the shutdown "
                f"budget of {budget}s: {action}"
            )
    if cluster.mode in ("unreachable", "misconfigured"):
        warnings.append(f"cluster {cluster.mode}: {cluster.detail}")
    if cluster.credential_problem:
        warnings.append(cluster.credential_problem)
    warnings.extend(dropin_order_warnings(config, dropin_overrides))
    return DoctorReport(sections=sections, warnings=warnings)


def cgroup_v1_warning(cgroups: CgroupFacts, *, swap_on: bool, limited: bool) -> str:
    """What a cgroup v1 (or hybrid) node means: no LimitedSwap, and what is still checked."""
    mode = cgroups.mode.value if cgroups.v1 else "v1 (the kubepods tree is in v1 hierarchies)"
    asked = " (memorySwap.swapBehavior LimitedSwap cannot apply)" if limited else ""
    swapping = (
        "; swap is on, and pods can still swap: up to their memory limit, or without bound "
        "when they have none"
        if swap_on
        else ""
    )
    return (
        f"{LIMITED_SWAP_NEEDS_V2}: cgroups are {mode}, so the kubelet sets no per-container "
        f"swap limits here{asked} and the swap audit compares none (memory.memsw caps "
        f"memory+swap, it is no swap limit){swapping}; still checked: swap presence and tmpfs "
        "noswap, per-pod usage for the NodeReport (v1 memory and cpuacct files), graceful "
        "shutdown"
    )


def dropin_order_warnings(config: AgentConfig, overrides: Sequence[Override]) -> list[str]:
    """One line per drop-in that decides ``InhibitDelayMaxSec`` instead of ours."""
    if not config.shutdown.manage_logind_delay:
        return []  # we write no drop-in: whichever file wins is the operator's choice
    ours = config.shutdown.logind_drop_in_path
    return [
        f"logind drop-in {override.describe()} ({ours}): logind uses its value, not ours"
        for override in overrides
    ]


def _shutdown_readiness_warnings(budget: int, logind: LogindFacts) -> list[str]:
    """Why pods would not be drained at shutdown: handling off, no logind, or kubelet too."""
    warnings = []
    if budget == 0:
        warnings.append(
            "graceful shutdown is off (shutdownGracePeriod 0s): pods are not drained before "
            "the node shuts down"
        )
    if not logind.present:
        consequence = (
            f"graceful shutdown ({budget}s) cannot hold the shutdown back, pods will not be "
            "drained at shutdown"
            if budget > 0
            else "graceful shutdown could not work on this node"
        )
        warnings.append(f"logind is not reachable ({logind.detail}): {consequence}")
    warnings.extend(
        f"kubelet (pid {lock.pid}) also holds a shutdown delay inhibitor lock: two "
        "shutdown managers are at work; set kubelet's shutdownGracePeriod to 0 to leave "
        "shutdown to kubelet-companion"
        for lock in kubelet_shutdown_delay_locks(logind.inhibitors)
    )
    return warnings
