"""The kubepods tree: where it is, on cgroup v2 or v1, and the one walk of its pod cgroups.

``KubepodsFinder`` is the one cgroup finder every command and controller uses (the swap
audit and enforcement, ``swap report``, the NodeReport's usage sampler, ``doctor``):

- cgroup v2 (``/sys/fs/cgroup`` is cgroup2, known by its ``cgroup.controllers``): the tree
  is right under the mount and holds every controller's files;
- cgroup v1, hybrid or not (``/sys/fs/cgroup`` is a tmpfs of one hierarchy per
  controller): the kubelet makes the same tree in each hierarchy, so it is found in the
  ``memory`` hierarchy (memory files) and the cpuacct one (CPU time). A hybrid host's
  cgroup2 mount at ``unified`` is never used: runc joins it too, but no memory or CPU
  controller is there (hugetlb at most), so its tree has none of the files we read.

Layouts, for kubelet's two cgroup drivers (``cgroupRoot`` ``/``), the same in every
hierarchy::

    systemd:  kubepods.slice/kubepods-pod<uid_>.slice/cri-containerd-<id>.scope       Guaranteed
              kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/<scope>
              kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice/<scope>
    cgroupfs: kubepods/pod<uid>/<id>                                                   Guaranteed
              kubepods/burstable/pod<uid>/<id>, kubepods/besteffort/pod<uid>/<id>

(``<uid_>`` is the pod UID with ``-`` escaped to ``_``; scopes are ``cri-containerd-``,
``crio-`` or ``docker-<id>.scope``; CRI-O on cgroupfs names the directory ``crio-<id>``.)

Walks go through file descriptors and never follow a symlink, so what they report is what
is really in the tree; a directory that is not a pod cgroup of the layout is never read.
Pod UIDs and container IDs from the API never build a path here: paths come from listings.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Literal

from agent.node.cgroupfiles import DIRECTORY_FLAGS, CgroupPathError, open_directory


class CgroupDriver(StrEnum):
    SYSTEMD = "systemd"
    CGROUPFS = "cgroupfs"


class PodQOSDir(StrEnum):
    GUARANTEED = "guaranteed"
    BURSTABLE = "burstable"
    BEST_EFFORT = "besteffort"


_SYSTEMD_SCOPE = re.compile(
    r"^(?P<runtime>cri-containerd|crio|docker)-(?P<id>[0-9a-f]{12,128})\.scope$"
)
_CGROUPFS_CONTAINER = re.compile(r"^(?:(?P<runtime>crio|docker)-)?(?P<id>[0-9a-f]{12,128})$")
_SYSTEMD_UID = "(?P<uid>[0-9A-Za-z_]{1,128})"
_CGROUPFS_POD = re.compile(r"^pod(?P<uid>[0-9A-Za-z-]{1,128})$")


def _systemd_parts(cgroup_root: str) -> list[str]:
    """kubelet's ``cgroupRoot`` as systemd name parts (``/kubelet.slice`` -> ``kubelet``)."""
    components = [part for part in cgroup_root.split("/") if part]
    if components and components[-1].endswith(".slice"):
        return [part.replace("_", "-") for part in components[-1][: -len(".slice")].split("-")]
    return components


@dataclass(frozen=True)
class KubepodsLayout:
    driver: CgroupDriver
    cgroup_root: str = "/"

    @property
    def _parts(self) -> list[str]:
        if self.driver is CgroupDriver.SYSTEMD:
            return [*_systemd_parts(self.cgroup_root), "kubepods"]
        return [*(part for part in self.cgroup_root.split("/") if part), "kubepods"]

    @property
    def _prefix(self) -> str:
        return "-".join(part.replace("-", "_") for part in self._parts)

    @property
    def root(self) -> tuple[str, ...]:
        """Components of the kubepods cgroup below the mount."""
        parts = self._parts
        if self.driver is CgroupDriver.CGROUPFS:
            return tuple(parts)
        escaped = [part.replace("-", "_") for part in parts]
        return tuple("-".join(escaped[: depth + 1]) + ".slice" for depth in range(len(parts)))

    def qos_dir(self, qos: PodQOSDir) -> str:
        if self.driver is CgroupDriver.CGROUPFS:
            return qos.value
        return f"{self._prefix}-{qos.value}.slice"

    @cached_property
    def _systemd_pod_patterns(self) -> dict[PodQOSDir, re.Pattern[str]]:
        """Compiled once per layout: every walk matches each pod directory's name."""
        patterns = {}
        for qos in PodQOSDir:
            middle = "" if qos is PodQOSDir.GUARANTEED else f"-{qos.value}"
            pattern = f"^{re.escape(self._prefix + middle)}-pod{_SYSTEMD_UID}\\.slice$"
            patterns[qos] = re.compile(pattern)
        return patterns

    def pod_uid(self, name: str, qos: PodQOSDir) -> str | None:
        """The pod UID a pod directory name carries, ``None`` if it is not a pod cgroup."""
        if self.driver is CgroupDriver.CGROUPFS:
            match = _CGROUPFS_POD.match(name)
            return match.group("uid") if match else None
        match = self._systemd_pod_patterns[qos].match(name)
        return match.group("uid").replace("_", "-") if match else None

    def container(self, name: str) -> tuple[str, str] | None:
        """``(runtime, id)`` for a container cgroup name, ``None`` for anything else."""
        pattern = _SYSTEMD_SCOPE if self.driver is CgroupDriver.SYSTEMD else _CGROUPFS_CONTAINER
        match = pattern.match(name)
        if match is None:
            return None
        return match.group("runtime") or "", match.group("id")

    def check_container_path(self, components: Sequence[str]) -> None:
        """Raise ``CgroupPathError`` unless ``components`` name a container cgroup here."""
        root = self.root
        if tuple(components[: len(root)]) != root:
            raise CgroupPathError(f"{'/'.join(components)!r} is not under {'/'.join(root)!r}")
        rest = list(components[len(root) :])
        if len(rest) == 2:
            qos = PodQOSDir.GUARANTEED
        elif len(rest) == 3:
            by_name = {self.qos_dir(each): each for each in PodQOSDir}
            if rest[0] not in by_name or by_name[rest[0]] is PodQOSDir.GUARANTEED:
                raise CgroupPathError(f"{rest[0]!r} is not a QoS cgroup of {self.driver} layout")
            qos = by_name[rest.pop(0)]
        else:
            raise CgroupPathError(f"{'/'.join(components)!r} is not a container cgroup path")
        if self.pod_uid(rest[0], qos) is None:
            raise CgroupPathError(f"{rest[0]!r} is not a pod cgroup name")
        if self.container(rest[1]) is None:
            raise CgroupPathError(f"{rest[1]!r} is not a container cgroup name")


def subdirectories(fd: int) -> list[tuple[str, int]]:
    """Names and inode numbers of real (non-symlink) subdirectories of an open directory
    (both come with the listing: no further system call)."""
    with os.scandir(fd) as entries:
        return [
            (entry.name, entry.inode()) for entry in entries if entry.is_dir(follow_symlinks=False)
        ]


class Subdirectory:
    """``with Subdirectory(parent, name) as fd``: its fd for the block (``None`` if it
    vanished since the listing, the pod being gone, or was swapped for a symlink), closed on
    the way out.

    A class rather than a ``contextlib.contextmanager`` generator: it runs for every pod and
    container of every walk, every few seconds, and a generator costs several times more.
    """

    __slots__ = ("fd",)

    def __init__(self, parent: int, name: str) -> None:
        try:
            self.fd: int | None = os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
        except OSError:
            self.fd = None

    def __enter__(self) -> int | None:
        return self.fd

    def __exit__(self, *_exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


@dataclass(frozen=True)
class PodCgroup:
    """One pod cgroup found by ``walk_pods``."""

    uid: str
    """As the tree names it, with systemd's ``_`` turned back into ``-``."""
    qos: PodQOSDir
    path: str
    """Relative to its hierarchy (the cgroup2 mount, or v1's ``memory``...), ``/``-separated."""
    fd: int
    """The pod directory, open only until the walk moves on to the next pod."""


@dataclass(frozen=True, slots=True)
class PodEntry:
    """One pod cgroup as a listing shows it, before it is opened."""

    uid: str
    """As the tree names it, with systemd's ``_`` turned back into ``-``."""
    qos: PodQOSDir
    path: str
    """Relative to its hierarchy (the cgroup2 mount, or v1's ``memory``...), ``/``-separated."""
    parent_fd: int
    """The directory holding it, open only until the listing moves on."""
    name: str
    inode: int
    """The directory's inode number from the listing: a pod cgroup made again under the same
    name (never by the kubelet, which names it by the pod's UID) gets another one."""


def list_pods(
    layout: KubepodsLayout, root_fd: int, only: Container[str] | None = None
) -> Iterator[PodEntry]:
    """Every pod cgroup under an open kubepods directory of ``layout`` (with ``only``, just
    the pods whose UID, as the tree names it, is in it), without opening it.

    The one listing every reader uses (``walk_pods`` opens what it yields). Directories that
    are not pod cgroups of the layout (or not wanted) are skipped. ``only`` is compared with
    names the listing returned; it never builds a path.
    """
    qos_dirs = {layout.qos_dir(qos): qos for qos in (PodQOSDir.BURSTABLE, PodQOSDir.BEST_EFFORT)}
    root_path = "/".join(layout.root)
    for name, inode in subdirectories(root_fd):
        if name in qos_dirs:
            qos = qos_dirs[name]
            with Subdirectory(root_fd, name) as qos_fd:
                if qos_fd is None:
                    continue
                for pod_name, pod_inode in subdirectories(qos_fd):
                    uid = layout.pod_uid(pod_name, qos)
                    if uid is None or (only is not None and uid not in only):
                        continue
                    path = f"{root_path}/{name}/{pod_name}"
                    yield PodEntry(uid, qos, path, qos_fd, pod_name, pod_inode)
        elif (uid := layout.pod_uid(name, PodQOSDir.GUARANTEED)) is not None and (
            only is None or uid in only
        ):
            yield PodEntry(uid, PodQOSDir.GUARANTEED, f"{root_path}/{name}", root_fd, name, inode)


def walk_pods(
    layout: KubepodsLayout, root_fd: int, only: Container[str] | None = None
) -> Iterator[PodCgroup]:
    """``list_pods``, each pod's directory open while the caller handles it.

    The container scan goes on to the containers, the usage reader reads the pod's own
    files. A pod that vanishes between the listing and its opening is skipped.
    """
    for entry in list_pods(layout, root_fd, only):
        with Subdirectory(entry.parent_fd, entry.name) as pod_fd:
            if pod_fd is not None:
                yield PodCgroup(entry.uid, entry.qos, entry.path, pod_fd)


V1_MEMORY = "memory"
"""The v1 hierarchy the tree is found in: the memory files are there."""
V1_CPU_HIERARCHIES = ("cpu,cpuacct", "cpuacct,cpu", "cpuacct")
"""Where a v1 host mounts cpuacct: with cpu (``cpu`` and ``cpuacct`` then link to it) or alone."""
_UNIFIED_MARKER = "cgroup.controllers"
"""In every cgroup2 directory, and in no v1 hierarchy or tmpfs."""


@dataclass(frozen=True)
class KubepodsRoot:
    """Where this node's kubepods tree is (from ``KubepodsFinder.find``)."""

    version: Literal[1, 2]
    layout: KubepodsLayout
    memory: Path
    """The hierarchy whose tree holds the memory files: the cgroup2 mount (v2),
    ``<mount>/memory`` (v1)."""
    cpu: Path | None
    """The hierarchy whose tree holds CPU time: the cgroup2 mount (v2), the cpuacct one
    (v1); ``None`` when no cpuacct hierarchy has the tree."""

    @property
    def driver(self) -> CgroupDriver:
        return self.layout.driver

    @property
    def prefix(self) -> str:
        """What goes before a path in the tree to make it relative to ``/sys/fs/cgroup``:
        ``""`` on v2, ``"memory/"`` on v1."""
        return "" if self.version == 2 else f"{V1_MEMORY}/"

    @property
    def path(self) -> str:
        """The kubepods cgroup relative to ``/sys/fs/cgroup``: ``kubepods.slice``,
        ``memory/kubepods``..."""
        return self.prefix + "/".join(self.layout.root)

    def describe(self) -> str:
        """``memory/kubepods (cgroupfs, cgroup v1)``: for people."""
        return f"{self.path} ({self.driver}, cgroup v{self.version})"

    def open(self, hierarchy: Path | None = None) -> contextlib.AbstractContextManager[int]:
        """An fd of the kubepods directory in ``hierarchy`` (default: the memory one).

        Raises ``CgroupPathError`` or ``OSError`` when it went away since it was found.
        """
        return open_directory(self.memory if hierarchy is None else hierarchy, self.layout.root)


class KubepodsFinder:
    """Finds the kubepods tree below ``mount`` (the host's ``/sys/fs/cgroup``) for kubelet's
    ``cgroupDriver`` (``auto``: either) and ``cgroupRoot``; the one finder (module doc)."""

    def __init__(self, mount: Path, *, driver: str = "auto", cgroup_root: str = "/") -> None:
        self.mount = mount
        drivers = list(CgroupDriver) if driver == "auto" else [CgroupDriver(driver)]
        self.layouts = tuple(KubepodsLayout(each, cgroup_root) for each in drivers)

    @property
    def unified(self) -> bool:
        """Whether ``mount`` is a cgroup2 (v2) mount rather than v1's tmpfs of hierarchies."""
        return (self.mount / _UNIFIED_MARKER).is_file()

    def find(self) -> KubepodsRoot | None:
        """Where the tree is now, ``None`` when there is none (see ``missing``)."""
        if self.unified:
            layout = self._layout_in(self.mount)
            return None if layout is None else KubepodsRoot(2, layout, self.mount, self.mount)
        memory = self.mount / V1_MEMORY
        layout = self._layout_in(memory)
        if layout is None:
            return None
        cpu = next(
            (
                self.mount / name
                for name in V1_CPU_HIERARCHIES
                if self._layout_in(self.mount / name, (layout,)) is not None
            ),
            None,
        )
        return KubepodsRoot(1, layout, memory, cpu)

    def missing(self) -> str:
        """Why ``find`` found nothing, for a report."""
        wanted = " or ".join(repr("/".join(layout.root)) for layout in self.layouts)
        where = self.mount if self.unified else self.mount / V1_MEMORY
        return f"no kubepods cgroup {wanted} under {where}"

    def _layout_in(
        self, hierarchy: Path, layouts: Sequence[KubepodsLayout] | None = None
    ) -> KubepodsLayout | None:
        """The first layout whose kubepods directory is in ``hierarchy``."""
        for layout in self.layouts if layouts is None else layouts:
            try:
                with open_directory(hierarchy, layout.root):
                    pass
            except (CgroupPathError, OSError):
                continue
            return layout
        return None
