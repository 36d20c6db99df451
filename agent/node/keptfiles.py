"""The counter files of each pod cgroup, kept open from one usage sample to the next.

The NodeReport samples every pod cgroup every few seconds. Opening, checking, reading and
closing each of a pod's files again every time cost more than everything else the idle agent
does: at 110 pods, 440 files, four system calls each. A cgroup file makes its content afresh
on every read from offset 0, so once opened (with the same checks as every other read: no
symlink, a regular file, reached through the pod's directory fd) a file is read again with
one ``pread``.

What may go stale, and how it is caught:
- a pod's cgroup is removed: its directory leaves the listing, and its files are closed at
  the end of that sample; a read in between fails with ``ENODEV`` and the pod is read afresh;
- a directory made again under the same name (the kubelet names it by pod UID, so this is
  not expected) has another inode in the listing, and its files are opened again.

File descriptors are a budget shared with everything else in the process: at most a quarter
of the soft ``RLIMIT_NOFILE`` is kept here (with the systemd unit's limit, every pod; under a
soft limit of 1,024, 64 pods). Pods past the budget, or missing one of the files, are read
the old way, opened and closed on every sample.

Concurrency: one sample at a time (``PodUsageReader`` holds its lock around a scan).
"""

from __future__ import annotations

import os
import resource
import weakref
from collections.abc import Container, Sequence

from agent.node.cgroupfiles import DIRECTORY_FLAGS, open_regular, reread
from agent.node.kubepods import PodEntry

_NOFILE_SHARE = 4
"""Keep at most 1/this of the soft fd limit open here."""
_MAX_KEPT_PODS = 1024


def kept_pod_budget(files_per_pod: int) -> int:
    """How many pods' files may stay open, from the process's soft fd limit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_KEPT_PODS
    return max(0, min(_MAX_KEPT_PODS, soft // _NOFILE_SHARE // files_per_pod))


def _close_all(kept: dict[str, tuple[int, tuple[int, ...]]]) -> None:
    for _inode, fds in kept.values():
        for fd in fds:
            os.close(fd)
    kept.clear()


class KeptPodFiles:
    """``names`` of every pod cgroup the listing shows, open by pod path until it goes."""

    def __init__(self, names: Sequence[str], budget: int | None = None) -> None:
        self.names = tuple(names)
        self.budget = kept_pod_budget(len(self.names)) if budget is None else budget
        self._kept: dict[str, tuple[int, tuple[int, ...]]] = {}
        """By pod path: the directory's inode and the files' fds, in ``names`` order."""
        # The fds go with the reader even if nobody calls ``close``.
        self._finalizer = weakref.finalize(self, _close_all, self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def read(self, entry: PodEntry) -> tuple[str, ...] | None:
        """The texts of the pod's files, read through kept fds; ``None`` when the pod is not
        kept (over the budget, a file missing, or the cgroup just went): read it afresh."""
        found = self._kept.get(entry.path)
        if found is not None and found[0] != entry.inode:
            self._forget(entry.path)
            found = None
        if found is None:
            fds = self._open(entry) if len(self._kept) < self.budget else None
            if fds is None:
                return None
            self._kept[entry.path] = (entry.inode, fds)
        else:
            fds = found[1]
        try:
            return tuple([reread(fd) for fd in fds])
        except OSError:
            self._forget(entry.path)
            return None

    def keep_only(self, paths: Container[str]) -> None:
        """Close the files of every pod whose path is not in ``paths`` (the last listing)."""
        for path in [path for path in self._kept if path not in paths]:
            self._forget(path)

    def close(self) -> None:
        self._finalizer()

    def _open(self, entry: PodEntry) -> tuple[int, ...] | None:
        try:
            directory = os.open(entry.name, DIRECTORY_FLAGS, dir_fd=entry.parent_fd)
        except OSError:
            return None
        fds: list[int] = []
        try:
            for name in self.names:
                fd = open_regular(directory, name)
                if fd is None:
                    for opened in fds:
                        os.close(opened)
                    return None
                fds.append(fd)
        finally:
            os.close(directory)
        return tuple(fds)

    def _forget(self, path: str) -> None:
        _inode, fds = self._kept.pop(path)
        for fd in fds:
            os.close(fd)
