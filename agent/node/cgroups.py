"""cgroup mode and swap-controller detection, by kubelet's and runc's rules.

- ``v2``: ``/sys/fs/cgroup`` is a cgroup2 filesystem (unified).
- ``hybrid``: ``/sys/fs/cgroup`` is tmpfs with v1 controllers and a cgroup2 mount at
  ``/sys/fs/cgroup/unified`` (systemd's hybrid layout, no memory controller on v2).
- ``v1``: tmpfs with v1 controllers only.

LimitedSwap needs v2 and the memory swap controller: kubelet checks that its own cgroup has
``memory.swap.max``. The root cgroup never has that file, so when we run in the root cgroup
we look at a child that does. On v1 and hybrid hosts kubelet's own check looks for
``memory.memsw.limit_in_bytes`` instead, but only to cap a container's memory+swap at its
memory limit: that is no LimitedSwap, and no swap controller the kubelet can use for it. So
``swap_controller`` is never set there; ``memsw_accounting`` says whether v1 has memsw.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from agent.node.filesystems import (
    CGROUP2_SUPER_MAGIC,
    TMPFS_MAGIC,
    FsMagic,
    statfs_magic,
)
from agent.node.paths import HostPaths, read_text


class CgroupMode(StrEnum):
    V1 = "v1"
    HYBRID = "hybrid"
    V2 = "v2"
    UNKNOWN = "unknown"


LIMITED_SWAP_NEEDS_V2 = "LimitedSwap needs cgroup v2"
"""What every command says of a v1 or hybrid node (doctor, ``swap report``, the audit's log)."""


@dataclass(frozen=True)
class CgroupFacts:
    mode: CgroupMode
    swap_controller: bool
    """cgroup v2's ``memory.swap.max``, the controller kubelet's LimitedSwap writes; never on
    v1 or hybrid hosts."""
    own_cgroup: str
    memsw_accounting: bool = False
    """v1 and hybrid only: ``memory.memsw.*`` exists (memory+swap accounting)."""

    @property
    def v2(self) -> bool:
        return self.mode is CgroupMode.V2

    @property
    def v1(self) -> bool:
        """v1 controllers, hybrid or not: the kubelet cannot apply LimitedSwap."""
        return self.mode in (CgroupMode.V1, CgroupMode.HYBRID)

    @property
    def limited_swap(self) -> bool:
        """Whether the kubelet can apply LimitedSwap here: cgroup v2 with the swap controller."""
        return self.v2 and self.swap_controller

    def swap_controller_line(self) -> str:
        """The swap controller as ``doctor`` and ``swap report`` show it."""
        if self.v1:
            what = (
                "memory.memsw only (cgroup v1 memory+swap accounting)"
                if self.memsw_accounting
                else "none (cgroup v1 without swap accounting)"
            )
            return f"{what}: not usable by the kubelet for LimitedSwap"
        if not self.v2:
            return "none found (cgroup mode unknown)"
        if self.swap_controller:
            return "memory.swap.max (cgroup v2): usable by the kubelet for LimitedSwap"
        return "none: no memory.swap.max (swap accounting off?), so no LimitedSwap"


def mode_from_magic(root_magic: int | None, unified_magic: int | None) -> CgroupMode:
    if root_magic == CGROUP2_SUPER_MAGIC:
        return CgroupMode.V2
    if root_magic == TMPFS_MAGIC:
        return CgroupMode.HYBRID if unified_magic == CGROUP2_SUPER_MAGIC else CgroupMode.V1
    return CgroupMode.UNKNOWN


def own_cgroup(paths: HostPaths, pid: str = "self") -> str:
    """The unified (``0::``) cgroup path of a process, ``/`` when unknown."""
    for line in (read_text(paths.proc / pid / "cgroup") or "").splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, cgroup = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            return cgroup or "/"
    return "/"


def _v2_swap_controller(root: Path, cgroup: str) -> bool:
    own = root / cgroup.lstrip("/")
    if cgroup not in ("", "/") and (own / "memory.swap.max").exists():
        return True
    if "memory" not in (read_text(root / "cgroup.subtree_control") or "").split():
        return False
    return any((child / "memory.swap.max").exists() for child in root.iterdir() if child.is_dir())


def read_cgroups(paths: HostPaths, fs_magic: FsMagic = statfs_magic) -> CgroupFacts:
    root = paths.cgroup_root
    mode = mode_from_magic(fs_magic(root), fs_magic(root / "unified"))
    cgroup = own_cgroup(paths)
    swap = mode is CgroupMode.V2 and _v2_swap_controller(root, cgroup)
    memsw = (
        mode in (CgroupMode.V1, CgroupMode.HYBRID)
        and (root / "memory" / "memory.memsw.limit_in_bytes").exists()
    )
    return CgroupFacts(mode=mode, swap_controller=swap, own_cgroup=cgroup, memsw_accounting=memsw)
