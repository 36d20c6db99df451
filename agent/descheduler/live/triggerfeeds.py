"""The caches' events, fed to the trigger detectors (``triggers``) the policy calls for: nodes
turning Ready always; critical add-ons left Unschedulable when CriticalAddonRescue is on;
NodeReports crossing LowNodeUtilization's thresholds when it balances on absolute ones."""

from __future__ import annotations

from collections.abc import Callable

from agent.descheduler.cache.state import ClusterState
from agent.descheduler.core.plugins.criticaladdonrescue import NAME as RESCUE
from agent.descheduler.core.plugins.criticaladdonrescue import CriticalAddonRescueArgs, is_critical
from agent.descheduler.core.plugins.nodeutilization.lownodeutilization import LowNodeUtilizationArgs
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.live.triggers import AddonWatch, NodeReadyWatch, UtilizationWatch
from agent.descheduler.model.cluster import PodInfo
from agent.descheduler.model.keys import UNSCHEDULABLE_SINCE
from agent.kube.nodereports import NodeReportCache, NodeUsageReport


def watch_triggers(
    policy: DeschedulerPolicy,
    state: ClusterState,
    reports: NodeReportCache | None,
    fire: Callable[[str, float], None],
    now: Callable[[], float],
) -> None:
    """Feed the caches' events to the trigger detectors (``triggers``)."""
    nodes = NodeReadyWatch(fire)
    state.nodes.subscribe(lambda kind, node: nodes.on_event(kind, node, state.nodes.store))
    rescue_args = policy.enabled_args(RESCUE, CriticalAddonRescueArgs)
    low = policy.enabled_args("LowNodeUtilization", LowNodeUtilizationArgs)
    if rescue_args is not None:
        _watch_addons(state, rescue_args, fire, now)
    if reports is None or low is None or low.use_deviation_thresholds:
        return
    utilization = UtilizationWatch(fire, low.thresholds, low.target_thresholds)
    watched = reports

    def on_report(kind: str, report: NodeUsageReport | None) -> None:
        if kind == "SYNCED":
            for each in watched.all_reports():
                utilization.on_report(kind, each)
        else:
            utilization.on_report(kind, report)

    reports.subscribe_reports(on_report)


def _watch_addons(
    state: ClusterState,
    rescue_args: CriticalAddonRescueArgs,
    fire: Callable[[str, float], None],
    now: Callable[[], float],
) -> None:

    def critical(pod: PodInfo) -> bool:
        if pod.namespace not in rescue_args.system_namespaces:
            return False
        return is_critical(pod, rescue_args.system_namespaces, state.priority_classes.store)

    def delay(pod: PodInfo) -> float:
        since = float(pod.extra.get(UNSCHEDULABLE_SINCE, 0.0))
        return since + rescue_args.unschedulable_seconds - now()

    addons = AddonWatch(fire, critical, delay)
    state.pods.subscribe(addons.on_event)
