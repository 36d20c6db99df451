"""The swap guide's node-level practice: ``system.slice`` kept out of swap (and its I/O
latency bounded), and kubelet's eviction threshold checked against ``vm.min_free_kbytes``.

Why apart from the controller: these depend on no pod. The controller
(``agent.swap.controller``) audits and enforces the per-container limits, on pod events
and on its timer; these run only on the timer's cycle, after a full audit, from that
cycle's node sample (cgroup mode, swap devices, memory size), so they read the node no
more often than the audit does. Each is opt-in: ``memorySwap.systemSliceNoSwap``,
``systemSliceIoLatency`` and ``checkEvictionThreshold``.

Concurrency: called on the loop by the controller, one cycle at a time; the file reads and
writes go to a worker thread and hand back plain values. ``eviction_warning`` is a bool
replaced by assignment; the controller copies it into the stats that scrapes read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import structlog

from agent.config.swap import MemorySwapConfig
from agent.node.cgroupfiles import CgroupPathError
from agent.node.kernel import read_min_free_kbytes
from agent.node.kubeletconfig import (
    KubeletConfigError,
    KubeletEvictionSettings,
    read_kubelet_eviction,
)
from agent.node.memory import MemoryFacts
from agent.node.paths import HostPaths
from agent.node.systemslice import SliceChange, SystemSlice, swap_disks
from agent.swap.audit import NodeSummary
from agent.swap.eviction import check_eviction_threshold

_log = structlog.get_logger(subsystem="swap")


class WarnOnce(Protocol):
    """The controller's warning that is said once while it lasts, under ``key``."""

    def __call__(self, key: str, message: str, **fields: Any) -> None: ...


class SwapPractice:
    def __init__(
        self,
        *,
        config: MemorySwapConfig,
        paths: HostPaths,
        warn_once: WarnOnce,
        system_slice: SystemSlice | None = None,
        read_kubelet_config: Callable[[], KubeletEvictionSettings] | None = None,
    ) -> None:
        self.config = config
        self.paths = paths
        self.warn_once = warn_once
        self.system_slice = system_slice or SystemSlice(paths.cgroup_root)
        self.read_kubelet_config = read_kubelet_config or (
            lambda: read_kubelet_eviction(Path(config.kubelet_config_path))
        )
        self.eviction_warning = False
        """Whether kubelet's eviction threshold was last found above ``vm.min_free_kbytes``."""

    async def apply(self, summary: NodeSummary, memory: MemoryFacts) -> None:
        """The opted-in settings and checks, on the node a full audit just sampled."""
        config = self.config
        if config.system_slice_no_swap or config.system_slice_io_latency > 0:
            if not summary.node.cgroup_v2:
                self.warn_once(
                    "slice-v1",
                    "system.slice settings need cgroup v2; skipped",
                    cgroup_mode=summary.cgroup_mode,
                )
            else:
                await self._system_slice(memory)
        if config.check_eviction_threshold:
            await self._eviction_check(summary)

    async def _system_slice(self, memory: MemoryFacts) -> None:
        config = self.config
        changes: list[SliceChange] = []
        problems: list[str] = []

        def apply() -> None:
            if config.system_slice_no_swap:
                try:
                    if change := self.system_slice.ensure_no_swap():
                        changes.append(change)
                except (CgroupPathError, OSError) as error:
                    problems.append(f"memory.swap.max: {error}")
            if config.system_slice_io_latency > 0:
                target = max(1, round(config.system_slice_io_latency * 1_000_000))
                devices = config.system_slice_io_latency_devices
                if not devices:
                    disks = swap_disks(self.paths, memory.swap_devices)
                    devices = disks.devices
                    problems.extend(f"io.latency: skipped {reason}" for reason in disks.skipped)
                for device in devices:
                    try:
                        if change := self.system_slice.ensure_io_latency(device, target):
                            changes.append(change)
                    except (CgroupPathError, OSError, ValueError) as error:
                        problems.append(f"io.latency {device}: {error}")

        await asyncio.to_thread(apply)
        for change in changes:
            _log.info(
                "system.slice updated", file=change.file, before=change.before, after=change.after
            )
        for problem in problems:
            self.warn_once(f"slice:{problem}", "system.slice setting not applied", detail=problem)

    async def _eviction_check(self, summary: NodeSummary) -> None:
        def read() -> tuple[KubeletEvictionSettings, int | None]:
            return self.read_kubelet_config(), read_min_free_kbytes(self.paths)

        try:
            settings, min_free_kbytes = await asyncio.to_thread(read)
        except KubeletConfigError as error:
            self.warn_once(f"kubeletconfig:{error}", "eviction check skipped", error=str(error))
            return
        check = check_eviction_threshold(
            settings,
            memory_capacity=summary.node.memory_total_bytes,
            min_free_kbytes=min_free_kbytes,
            swap_on=summary.swap_on,
        )
        was = self.eviction_warning
        self.eviction_warning = check.warning is not None
        if check.warning is not None:
            self.warn_once(f"eviction:{check.warning}", check.warning)
        elif was:
            _log.info("eviction threshold below vm.min_free_kbytes now", detail=check.detail)
