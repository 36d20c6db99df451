"""Per-pod CPU, memory and swap counters from the kubepods tree, at the pod cgroup level.

The pod cgroup (not its containers) is read, so one pod costs three or four small reads
whatever its container count, and sandboxes are included as the kubelet's own summary does.
The tree is where ``kubepods.KubepodsFinder`` finds it, and pod directories are listed by
``kubepods.list_pods``/``walk_pods``: the one finder and walk (and naming rules) the swap
audit's scan uses, for both drivers, v2 and v1; a directory that is not a pod cgroup is
never read.

- cgroup v2: ``cpu.stat`` ``usage_usec``; working set = ``memory.current`` - ``inactive_file``
  (``memory.stat``), as cAdvisor and the kubelet compute it; swap ``memory.swap.current``.
- cgroup v1: ``cpuacct.usage`` (ns) from the ``cpu,cpuacct`` (or ``cpuacct``) hierarchy;
  working set and swap from the memory hierarchy as ``cgroupstats.read_v1_memory`` reads
  them (``memory.usage_in_bytes`` - ``total_inactive_file``; memsw minus usage).

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
from dataclasses import dataclass
from pathlib import Path

from agent.node.cgroupfiles import DIRECTORY_FLAGS, CgroupPathError, read_file
from agent.node.cgroupstats import parse_int, read_v1_memory, stat_field, working_set
from agent.node.keptfiles import KeptPodFiles
from agent.node.kubepods import (
    CgroupDriver,
    KubepodsFinder,
    KubepodsRoot,
    PodEntry,
    list_pods,
    walk_pods,
)

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


def _v2_counters(uid: str, texts: tuple[str | None, ...]) -> PodCounters:
    cpu_stat, memory_current, memory_stat, swap_current = texts
    return PodCounters(
        uid=uid,
        cpu_usec=stat_field(cpu_stat, "usage_usec"),
        memory_working_set=working_set(
            parse_int(memory_current), stat_field(memory_stat, "inactive_file")
        ),
        swap_bytes=parse_int(swap_current),
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
        self.finder = KubepodsFinder(mount, driver=driver, cgroup_root=cgroup_root)
        self.kept = KeptPodFiles(_V2_FILES, kept_pods)
        self._lock = threading.Lock()

    def read(self) -> PodScan:
        with self._lock:
            root = self.finder.find()
            try:
                if root is not None and root.version == 2:
                    return self._read_v2(root)
                self.kept.keep_only(())
                return PodScan(None, None, {}) if root is None else self._read_v1(root)
            except (CgroupPathError, FileNotFoundError, NotADirectoryError):
                # The tree went away between finding and reading it: as if never there.
                self.kept.keep_only(())
                return PodScan(None, None, {})

    def close(self) -> None:
        """Close the kept files (they are closed with the reader too)."""
        self.kept.close()

    def _read_v2(self, root: KubepodsRoot) -> PodScan:
        kept = self.kept
        counters = {}
        listed = set()
        with root.open() as root_fd:
            for entry in list_pods(root.layout, root_fd):
                listed.add(entry.path)
                texts = kept.read(entry) or _read_afresh(entry)
                if texts is not None:
                    counters[entry.uid] = _v2_counters(entry.uid, texts)
        kept.keep_only(listed)
        return PodScan(2, root.driver, counters)

    @staticmethod
    def _read_v1(root: KubepodsRoot) -> PodScan:
        cpu: dict[str, int | None] = {}
        if root.cpu is not None:
            with root.open(root.cpu) as cpu_fd:
                for pod in walk_pods(root.layout, cpu_fd):
                    nanos = parse_int(read_file(pod.fd, "cpuacct.usage"))
                    cpu[pod.uid] = None if nanos is None else nanos // 1000
        memory: dict[str, tuple[int | None, int | None]] = {}
        with root.open() as memory_fd:
            for pod in walk_pods(root.layout, memory_fd):
                memory[pod.uid] = read_v1_memory(pod.fd)
        counters = {
            uid: PodCounters(
                uid=uid,
                cpu_usec=cpu.get(uid),
                memory_working_set=memory.get(uid, (None, None))[0],
                swap_bytes=memory.get(uid, (None, None))[1],
            )
            for uid in cpu.keys() | memory.keys()
        }
        return PodScan(1, root.driver, counters)
