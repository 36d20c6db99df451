"""The swap guide's protections for ``system.slice``, each opt-in.

- ``memory.swap.max = 0``: system daemons (and the kubelet itself) never swap, so a node
  that lends swap to pods keeps its own services in RAM.
- ``io.latency``: a latency target for system.slice on the disks that back swap, so when
  pods swap heavily the kernel throttles their I/O before the system's.

Only these two files of ``<cgroup2 mount>/system.slice`` are ever written, through the
same no-symlink walk as the kubepods writer, and only when the value differs. The disks
for ``io.latency`` are whole disks: the kernel refuses partitions, and zram has no queue
to throttle.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.node.cgroupfiles import open_directory, read_file, write_file
from agent.node.containercgroups import SWAP_MAX, parse_swap_max
from agent.node.memory import SwapDevice
from agent.node.paths import HostPaths, read_text

SYSTEM_SLICE = "system.slice"
IO_LATENCY = "io.latency"
_LATENCY_LINE = re.compile(r"^(?P<device>\d+:\d+)\s+target=(?P<target>\d+)")


@dataclass(frozen=True)
class SliceChange:
    file: str
    before: str | None
    after: str


def parse_io_latency(text: str | None) -> dict[str, int]:
    """``MAJ:MIN target=<usec>`` lines into ``{"MAJ:MIN": usec}``."""
    targets = {}
    for line in (text or "").splitlines():
        match = _LATENCY_LINE.match(line.strip())
        if match:
            targets[match.group("device")] = int(match.group("target"))
    return targets


class SystemSlice:
    def __init__(self, mount: Path) -> None:
        self.mount = mount

    def ensure_no_swap(self) -> SliceChange | None:
        """Set ``memory.swap.max`` to 0 unless it already is; return what changed."""
        with open_directory(self.mount, [SYSTEM_SLICE]) as fd:
            before = read_file(fd, SWAP_MAX)
            if parse_swap_max(before) == 0:
                return None
            write_file(fd, SWAP_MAX, "0")
        return SliceChange(SWAP_MAX, before.strip() if before else None, "0")

    def ensure_io_latency(self, device: str, target_usec: int) -> SliceChange | None:
        if not re.fullmatch(r"\d+:\d+", device) or target_usec <= 0:
            raise ValueError(f"bad io.latency setting {device!r} target={target_usec}")
        with open_directory(self.mount, [SYSTEM_SLICE]) as fd:
            current = parse_io_latency(read_file(fd, IO_LATENCY)).get(device)
            if current == target_usec:
                return None
            line = f"{device} target={target_usec}"
            write_file(fd, IO_LATENCY, line)
        return SliceChange(
            IO_LATENCY, None if current is None else f"{device} target={current}", line
        )


@dataclass(frozen=True)
class SwapDisks:
    devices: tuple[str, ...]
    skipped: tuple[str, ...]


def _whole_disk(paths: HostPaths, device: int) -> tuple[str | None, str]:
    number = f"{os.major(device)}:{os.minor(device)}"
    entry = paths.sys / "dev" / "block" / number
    if not entry.exists():
        return None, f"{number} is not a block device (e.g. btrfs or a network filesystem)"
    if (entry / "partition").exists():
        entry = entry.resolve().parent
        number = (read_text(entry / "dev") or "").strip() or number
    if entry.resolve().name.startswith("zram"):
        return None, f"{number} is zram (compressed RAM, no disk I/O to protect)"
    return number, ""


def swap_disks(paths: HostPaths, devices: Sequence[SwapDevice]) -> SwapDisks:
    """The whole disks behind the active swap devices, as ``MAJ:MIN``.

    Swap filenames are host paths; they are reached through ``/proc/1/root`` so this also
    works from a container with the host's PID namespace.
    """
    found: list[str] = []
    skipped: list[str] = []
    for swap in devices:
        host_path = paths.proc / "1" / "root" / swap.filename.lstrip("/")
        try:
            status = host_path.stat()
        except OSError as error:
            skipped.append(f"{swap.filename}: {error.strerror}")
            continue
        device = status.st_rdev if swap.kind == "partition" else status.st_dev
        number, reason = _whole_disk(paths, device)
        if number is None:
            skipped.append(f"{swap.filename}: {reason}")
        elif number not in found:
            found.append(number)
    return SwapDisks(tuple(found), tuple(skipped))
