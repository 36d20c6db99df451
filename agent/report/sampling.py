"""One sample of this node: ``/proc`` counters and every pod cgroup's counters (blocking).

Runs in a worker thread; the pod scan shares the swap audit's layout rules (the
``memorySwap`` section's ``cgroupDriver`` and ``cgroupRoot``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agent.config.swap import MemorySwapConfig
from agent.node.nodeusage import read_node_counters
from agent.node.paths import HostPaths
from agent.node.podusage import PodUsageReader
from agent.report.usage import Sample


class UsageSource(Protocol):
    def read(self) -> Sample:
        """One sample; ``OSError`` when the node cannot be read."""


class NodeSampler:
    def __init__(
        self, paths: HostPaths, swap: MemorySwapConfig, monotonic: Callable[[], float]
    ) -> None:
        self.paths = paths
        self.monotonic = monotonic
        self.pods = PodUsageReader(
            paths.cgroup_root, driver=swap.cgroup_driver, cgroup_root=swap.cgroup_root
        )

    def read(self) -> Sample:
        node = read_node_counters(self.paths)
        return Sample(self.monotonic(), node, self.pods.read())
