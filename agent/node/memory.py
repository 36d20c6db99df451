"""Memory and swap totals, from ``/proc/meminfo`` through psutil, and ``/proc/swaps``.

Swap is "on" when ``/proc/swaps`` lists a device, which is kubelet's rule; capacity comes
from ``SwapTotal`` as kubelet reports it in ``node.status.nodeInfo.swap.capacity``.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from agent.node.paths import HostPaths, read_text
from agent.node.procfs import psutil_procfs


@dataclass(frozen=True)
class SwapDevice:
    filename: str
    kind: str
    size_bytes: int
    used_bytes: int
    priority: int


@dataclass(frozen=True)
class MemoryFacts:
    memory_total_bytes: int
    memory_available_bytes: int
    swap_total_bytes: int
    swap_free_bytes: int
    swap_in_bytes: int
    swap_out_bytes: int
    swap_devices: tuple[SwapDevice, ...]

    @property
    def swap_used_bytes(self) -> int:
        return self.swap_total_bytes - self.swap_free_bytes

    @property
    def swap_on(self) -> bool:
        return bool(self.swap_devices)


def parse_proc_swaps(text: str) -> tuple[SwapDevice, ...]:
    """Parse ``/proc/swaps``; sizes there are KiB. The header line is skipped."""
    devices = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5:
            continue
        # Filenames with spaces are octal-escaped by the kernel (\040), so split is safe.
        filename = fields[0].replace("\\040", " ")
        devices.append(
            SwapDevice(
                filename=filename,
                kind=fields[1],
                size_bytes=int(fields[2]) * 1024,
                used_bytes=int(fields[3]) * 1024,
                priority=int(fields[4]),
            )
        )
    return tuple(devices)


def read_memory(paths: HostPaths) -> MemoryFacts:
    with psutil_procfs(paths.proc):
        virtual = psutil.virtual_memory()
        swap = psutil.swap_memory()
    return MemoryFacts(
        memory_total_bytes=int(virtual.total),
        memory_available_bytes=int(virtual.available),
        swap_total_bytes=int(swap.total),
        swap_free_bytes=int(swap.free),
        swap_in_bytes=int(swap.sin),
        swap_out_bytes=int(swap.sout),
        swap_devices=parse_proc_swaps(read_text(paths.proc / "swaps") or ""),
    )
