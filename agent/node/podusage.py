"""Per-pod CPU, memory and swap counters from the kubepods tree, at the pod cgroup level.

The pod cgroup (not its containers) is read, so one pod costs three or four small reads
whatever its container count, and sandboxes are included as the kubelet's own summary does.
Pod directories are found by ``kubepods.walk_pods``, the same walk (and naming rules) the swap
audit's scan uses, for both drivers; a directory that is not a pod cgroup is never read.

- cgroup v2: ``cpu.stat`` ``usage_usec``; working set = ``memory.current`` - ``inactive_file``
  (``memory.stat``), as cAdvisor and the kubelet compute it; swap ``memory.swap.current``.
- cgroup v1: ``cpuacct.usage`` (ns) from the ``cpu,cpuacct`` (or ``cpuacct``) hierarchy;
  working set = ``memory.usage_in_bytes`` - ``total_inactive_file``; swap =
  ``memory.memsw.usage_in_bytes`` - ``memory.usage_in_bytes`` where memsw accounting is on.

CPU is a counter: a rate needs two samples (see ``agent.report.usage``). Reads go through
``cgroupfiles`` (no symlinks followed), and a pod that vanishes mid-scan is simply skipped.
On cgroup v2 each pod's files stay open between samples (``keptfiles``: that is most of the
sample's cost otherwise).

Concurrency: ``read`` runs in a worker thread; a lock keeps two scans from sharing the kept
files (the report controller awaits each sample before the next, so it is never contended).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.node.cgroupfiles import DIRECTORY_FLAGS, CgroupPathError, open_directory, read_file
from agent.node.keptfiles import KeptPodFiles
from agent.node.kubepods import (
    CgroupDriver,
    KubepodsLayout,
    PodCgroup,
    PodEntry,
    list_pods,
    walk_pods,
)

_V1_CPU_HIERARCHIES = ("cpu,cpuacct", "cpuacct,cpu", "cpuacct")
_V2_FILES = ("cpu.stat", "memory.current", "memory.stat", "memory.swap.current")


@dataclass(frozen=True)
class PodCounters:
    uid: str
    """As the tree names it (systemd's ``_`` turned back into ``-``)."""
    cpu_usec: int | None
    """Cumulative CPU time in microseconds."""
    memory_working_set: int | None
    swap_bytes: int | None


@dataclass(frozen=True)
class PodScan:
    cgroup_version: int | None
    """2, 1, or ``None`` when no kubepods tree was found."""
    driver: CgroupDriver | None
    pods: dict[str, PodCounters]
    """By pod UID."""


def _int(text: str | None) -> int | None:
    value = (text or "").strip()
    return int(value) if value.isdigit() else None


def stat_field(text: str | None, key: str) -> int | None:
    """One ``key value`` line of a ``cpu.stat`` / ``memory.stat`` file (the first, if
    repeated). Found with ``str.find``, not by splitting: ``memory.stat`` has dozens of
    lines, read for every pod every few seconds."""
    if not text:
        return None
    prefix = f"{key} "
    if text.startswith(prefix):
        start = len(prefix)
    elif (at := text.find(f"\n{prefix}")) >= 0:
        start = at + 1 + len(prefix)
    else:
        return None
    end = text.find("\n", start)
    return _int(text[start:] if end < 0 else text[start:end])


def _working_set(usage: int | None, inactive_file: int | None) -> int | None:
    if usage is None:
        return None
    return max(0, usage - (inactive_file or 0))


def _v2_counters(uid: str, texts: tuple[str | None, ...]) -> PodCounters:
    cpu_stat, memory_current, memory_stat, swap_current = texts
    return PodCounters(
        uid=uid,
        cpu_usec=stat_field(cpu_stat, "usage_usec"),
        memory_working_set=_working_set(
            _int(memory_current), stat_field(memory_stat, "inactive_file")
        ),
        swap_bytes=_int(swap_current),
    )


def _read_afresh(entry: PodEntry) -> tuple[str | None, ...] | None:
    """The pod's v2 files opened and closed now; ``None`` when the pod is gone."""
    try:
        fd = os.open(entry.name, DIRECTORY_FLAGS, dir_fd=entry.parent_fd)
    except OSError:
        return None
    try:
        return tuple([read_file(fd, name) for name in _V2_FILES])
    finally:
        os.close(fd)


class PodUsageReader:
    """Reads every pod cgroup's counters below ``mount`` (``/sys/fs/cgroup`` of the host)."""

    def __init__(
        self,
        mount: Path,
        *,
        driver: str = "auto",
        cgroup_root: str = "/",
        kept_pods: int | None = None,
    ) -> None:
        """``kept_pods``: how many pods' files may stay open (default: from the fd limit)."""
        self.mount = mount
        drivers = list(CgroupDriver) if driver == "auto" else [CgroupDriver(driver)]
        self.layouts = [KubepodsLayout(each, cgroup_root) for each in drivers]
        self.kept = KeptPodFiles(_V2_FILES, kept_pods)
        self._lock = threading.Lock()

    @property
    def unified(self) -> bool:
        return (self.mount / "cgroup.controllers").is_file()

    def read(self) -> PodScan:
        with self._lock:
            if self.unified:
                return self._read_v2()
            self.kept.keep_only(())
            return self._read_v1()

    def close(self) -> None:
        """Close the kept files (they are closed with the reader too)."""
        self.kept.close()

    def _layout(self, mount: Path) -> KubepodsLayout | None:
        """The first layout whose kubepods root exists under ``mount``."""
        for layout in self.layouts:
            try:
                with open_directory(mount, layout.root):
                    pass
            except (CgroupPathError, FileNotFoundError, NotADirectoryError):
                continue
            return layout
        return None

    def _walk(self, mount: Path) -> tuple[CgroupDriver, Iterator[PodCgroup]] | None:
        """The first layout whose kubepods root exists under ``mount``, and its pod dirs."""
        layout = self._layout(mount)
        return None if layout is None else (layout.driver, self._pods_of(mount, layout))

    @staticmethod
    def _pods_of(mount: Path, layout: KubepodsLayout) -> Iterator[PodCgroup]:
        with open_directory(mount, layout.root) as root_fd:
            yield from walk_pods(layout, root_fd)

    def _read_v2(self) -> PodScan:
        layout = self._layout(self.mount)
        if layout is None:
            self.kept.keep_only(())
            return PodScan(None, None, {})
        kept = self.kept
        counters = {}
        listed = set()
        with open_directory(self.mount, layout.root) as root_fd:
            for entry in list_pods(layout, root_fd):
                listed.add(entry.path)
                texts = kept.read(entry) or _read_afresh(entry)
                if texts is not None:
                    counters[entry.uid] = _v2_counters(entry.uid, texts)
        kept.keep_only(listed)
        return PodScan(2, layout.driver, counters)

    def _read_v1(self) -> PodScan:
        cpu: dict[str, int | None] = {}
        driver: CgroupDriver | None = None
        for hierarchy in _V1_CPU_HIERARCHIES:
            if (self.mount / hierarchy).is_dir() and (found := self._walk(self.mount / hierarchy)):
                driver, pods = found
                for pod in pods:
                    nanos = _int(read_file(pod.fd, "cpuacct.usage"))
                    cpu[pod.uid] = None if nanos is None else nanos // 1000
                break
        memory: dict[str, tuple[int | None, int | None]] = {}
        found = self._walk(self.mount / "memory") if (self.mount / "memory").is_dir() else None
        if found is not None:
            driver, pods = found
            for pod in pods:
                fd = pod.fd
                usage = _int(read_file(fd, "memory.usage_in_bytes"))
                memsw = _int(read_file(fd, "memory.memsw.usage_in_bytes"))
                working_set = _working_set(
                    usage, stat_field(read_file(fd, "memory.stat"), "total_inactive_file")
                )
                swap = None if memsw is None or usage is None else max(0, memsw - usage)
                memory[pod.uid] = (working_set, swap)
        if driver is None:
            return PodScan(None, None, {})
        counters = {
            uid: PodCounters(
                uid=uid,
                cpu_usec=cpu.get(uid),
                memory_working_set=memory.get(uid, (None, None))[0],
                swap_bytes=memory.get(uid, (None, None))[1],
            )
            for uid in cpu.keys() | memory.keys()
        }
        return PodScan(1, driver, counters)
