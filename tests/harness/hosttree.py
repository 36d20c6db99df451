"""Fixture host trees: a fake ``/proc``, ``/sys`` and ``/etc`` the node adapters can read.

The adapters take ``HostPaths``; pointing them here tests parsing and rules without the
machine's real state. Values default to a plausible 16 GiB cgroup v2 node without swap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.node.paths import HostPaths

GIB = 2**30


@dataclass
class HostTree:
    root: Path

    @property
    def paths(self) -> HostPaths:
        return HostPaths(
            proc=self.root / "proc",
            sys=self.root / "sys",
            etc=self.root / "etc",
            run=self.root / "run",
        )

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def memory(
        self, *, total: int = 16 * GIB, swap_total: int = 0, swap_free: int | None = None
    ) -> None:
        free = swap_total if swap_free is None else swap_free
        kib = 1024
        self.write(
            "proc/meminfo",
            "\n".join(
                [
                    f"MemTotal:       {total // kib} kB",
                    f"MemFree:        {total // 2 // kib} kB",
                    f"MemAvailable:   {total // 2 // kib} kB",
                    "Buffers:           1024 kB",
                    "Cached:          204800 kB",
                    "SwapCached:           0 kB",
                    "Active:          102400 kB",
                    "Inactive:        102400 kB",
                    "Shmem:             4096 kB",
                    "Slab:             51200 kB",
                    "SReclaimable:     25600 kB",
                    f"SwapTotal:      {swap_total // kib} kB",
                    f"SwapFree:       {free // kib} kB",
                ]
            )
            + "\n",
        )
        self.write("proc/vmstat", "pswpin 10\npswpout 20\n")

    def swaps(self, *devices: tuple[str, str, int, int, int]) -> None:
        lines = ["Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority"]
        lines += [
            f"{name}\t{kind}\t{size}\t{used}\t{prio}" for name, kind, size, used, prio in devices
        ]
        self.write("proc/swaps", "\n".join(lines) + "\n")

    def kernel(
        self,
        release: str = "6.1.0-18-amd64",
        min_free_kbytes: int = 67584,
        boot_id: str = "0b6f1c1e-5d5a-4d7e-9d3c-5b1f1c1e5d5a",
    ) -> None:
        self.write("proc/sys/kernel/osrelease", release + "\n")
        self.write("proc/sys/vm/min_free_kbytes", f"{min_free_kbytes}\n")
        self.write("proc/sys/kernel/random/boot_id", boot_id + "\n")

    def user_namespace(self, inside: bool) -> None:
        mapping = (
            "         0     100000      65536" if inside else "         0          0 4294967295"
        )
        self.write("proc/self/uid_map", mapping + "\n")

    def own_cgroup(self, path: str = "/system.slice/kubelet-companion.service") -> None:
        self.write("proc/self/cgroup", f"0::{path}\n")

    def cgroup_v2(
        self, *, swap_controller: bool = True, own: str = "/system.slice/kubelet-companion.service"
    ) -> None:
        self.own_cgroup(own)
        self.write("sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n")
        own_dir = self.root / "sys/fs/cgroup" / own.lstrip("/")
        own_dir.mkdir(parents=True, exist_ok=True)
        if swap_controller:
            # Every non-root cgroup with the memory controller has the file, as on a real host.
            directory = own_dir
            while directory != self.root / "sys/fs/cgroup":
                (directory / "memory.swap.max").write_text("max\n")
                directory = directory.parent

    def own_cgroup_v1(
        self, path: str = "/system.slice/kubelet-companion.service", *, hybrid: bool = True
    ) -> None:
        """``/proc/self/cgroup`` of a v1 host: one line per hierarchy, plus the unified
        ``0::`` line on a hybrid one."""
        lines = [
            "12:hugetlb:/",
            f"11:memory:{path}",
            f"10:cpu,cpuacct:{path}",
            f"9:pids:{path}",
            f"1:name=systemd:{path}",
        ]
        if hybrid:
            lines.append(f"0::{path}")
        self.write("proc/self/cgroup", "\n".join(lines) + "\n")

    def standard(self, **memory: int) -> HostTree:
        self.memory(**memory)
        self.swaps()
        self.kernel()
        self.user_namespace(False)
        self.cgroup_v2()
        return self
