"""Node-level swap, memory and cgroup facts as Prometheus series.

Usage is read at scrape time (one ``/proc/meminfo`` read), so the numbers are never stale;
facts that cannot change while we run (cgroup mode, tmpfs noswap) come from the start-up
snapshot. Names follow kubelet and cAdvisor where they have one.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agent.node.cgroups import CgroupMode
from agent.node.facts import NodeFacts
from agent.node.memory import read_memory
from agent.node.paths import HostPaths


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class NodeFactsCollector(Collector):
    def __init__(self, paths: HostPaths, facts: NodeFacts) -> None:
        self._paths = paths
        self._facts = facts

    def collect(self) -> Iterable[GaugeMetricFamily]:
        facts = self._facts
        try:
            memory = read_memory(self._paths)
        except OSError:
            memory = facts.memory  # /proc briefly unreadable: report the last known values
        yield _gauge(
            "machine_memory_bytes",
            "Physical memory of the machine in bytes.",
            memory.memory_total_bytes,
        )
        yield _gauge(
            "machine_swap_bytes", "Swap capacity of the machine in bytes.", memory.swap_total_bytes
        )
        yield _gauge(
            "node_swap_usage_bytes",
            "Current swap usage of the node in bytes.",
            memory.swap_used_bytes,
        )
        yield _gauge(
            "kubelet_companion_swap_enabled",
            "1 when /proc/swaps lists at least one active swap device.",
            1 if memory.swap_on else 0,
        )
        yield _gauge(
            "kubelet_companion_cgroup_v2",
            "1 when /sys/fs/cgroup is the unified cgroup v2 hierarchy.",
            1 if facts.cgroups.v2 else 0,
        )
        mode = GaugeMetricFamily(
            "kubelet_companion_cgroup_mode",
            "The node's cgroup mode; the series with value 1 is current.",
            labels=["mode"],
        )
        for each in CgroupMode:
            mode.add_metric([each.value], 1 if facts.cgroups.mode is each else 0)
        yield mode
        yield _gauge(
            "kubelet_companion_swap_controller_available",
            "1 when cgroup v2's memory swap controller (memory.swap.max), which kubelet's "
            "LimitedSwap needs, is available; 0 on cgroup v1 and hybrid nodes.",
            1 if facts.cgroups.swap_controller else 0,
        )
        yield _gauge(
            "kubelet_companion_tmpfs_noswap_supported",
            "1 when tmpfs accepts the noswap mount option on this node.",
            1 if facts.tmpfs_noswap.supported else 0,
        )
