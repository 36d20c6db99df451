"""The kubepods cgroup v2 tree: find every container's cgroup, read and (safely) set its swap.

Layouts, for kubelet's two cgroup drivers (``cgroupRoot`` ``/``)::

    systemd:  kubepods.slice/kubepods-pod<uid_>.slice/cri-containerd-<id>.scope       Guaranteed
              kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/<scope>
              kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice/<scope>
    cgroupfs: kubepods/pod<uid>/<id>                                                   Guaranteed
              kubepods/burstable/pod<uid>/<id>, kubepods/besteffort/pod<uid>/<id>

(``<uid_>`` is the pod UID with ``-`` escaped to ``_``; scopes are ``cri-containerd-``,
``crio-`` or ``docker-<id>.scope``; CRI-O on cgroupfs names the directory ``crio-<id>``.)

The scan walks directories through file descriptors and never follows a symlink, so what
it reports is what is really in the tree. The writer accepts only a path shaped like a
container cgroup of that layout, walks it the same way (see ``cgroupfiles``) and only ever
writes ``memory.swap.max``. Pod UIDs and container IDs from the API never reach it: paths
come from the scan, and the audit matches the API's values against them as plain strings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Literal

from agent.node.cgroupfiles import (
    DIRECTORY_FLAGS,
    CgroupPathError,
    open_directory,
    read_file,
    write_file,
)

SWAP_MAX = "memory.swap.max"
SWAP_CURRENT = "memory.swap.current"

SwapMax = int | Literal["max"] | None
"""A ``memory.swap.max`` value: bytes, ``"max"`` (unlimited) or ``None`` (missing/garbled)."""


class CgroupDriver(StrEnum):
    SYSTEMD = "systemd"
    CGROUPFS = "cgroupfs"


class PodQOSDir(StrEnum):
    GUARANTEED = "guaranteed"
    BURSTABLE = "burstable"
    BEST_EFFORT = "besteffort"


@dataclass(frozen=True)
class CgroupReading:
    """One container cgroup found in the tree."""

    path: str
    """Relative to the cgroup2 mount, ``/``-separated."""
    qos: PodQOSDir
    pod_uid: str
    """As the tree names it, with systemd's ``_`` turned back into ``-``."""
    container_id: str
    runtime: str
    swap_max: SwapMax
    swap_current: int | None


@dataclass(frozen=True)
class KubepodsScan:
    driver: CgroupDriver | None
    """The layout found, ``None`` when there is no kubepods tree."""
    root: str | None
    containers: tuple[CgroupReading, ...] = ()
    problem: str | None = None


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


def parse_swap_max(text: str | None) -> SwapMax:
    value = (text or "").strip()
    if value == "max":
        return "max"
    return int(value) if value.isdigit() else None


def _parse_int(text: str | None) -> int | None:
    value = (text or "").strip()
    return int(value) if value.isdigit() else None


def _subdirectories(fd: int) -> list[tuple[str, int]]:
    """Names and inode numbers of real (non-symlink) subdirectories of an open directory
    (both come with the listing: no further system call)."""
    with os.scandir(fd) as entries:
        return [
            (entry.name, entry.inode()) for entry in entries if entry.is_dir(follow_symlinks=False)
        ]


class _Subdirectory:
    """``with _Subdirectory(parent, name) as fd``: its fd for the block (``None`` if it
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
    """Relative to the cgroup mount, ``/``-separated."""
    fd: int
    """The pod directory, open only until the walk moves on to the next pod."""


@dataclass(frozen=True, slots=True)
class PodEntry:
    """One pod cgroup as a listing shows it, before it is opened."""

    uid: str
    """As the tree names it, with systemd's ``_`` turned back into ``-``."""
    qos: PodQOSDir
    path: str
    """Relative to the cgroup mount, ``/``-separated."""
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
    for name, inode in _subdirectories(root_fd):
        if name in qos_dirs:
            qos = qos_dirs[name]
            with _Subdirectory(root_fd, name) as qos_fd:
                if qos_fd is None:
                    continue
                for pod_name, pod_inode in _subdirectories(qos_fd):
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

    The swap scan goes on to the containers, the usage reader reads the pod's own files. A
    pod that vanishes between the listing and its opening is skipped.
    """
    for entry in list_pods(layout, root_fd, only):
        with _Subdirectory(entry.parent_fd, entry.name) as pod_fd:
            if pod_fd is not None:
                yield PodCgroup(entry.uid, entry.qos, entry.path, pod_fd)


class KubepodsTree:
    """Scan and write one node's kubepods tree below ``mount`` (the cgroup2 mount)."""

    def __init__(self, mount: Path, *, driver: str = "auto", cgroup_root: str = "/") -> None:
        self.mount = mount
        drivers = list(CgroupDriver) if driver == "auto" else [CgroupDriver(driver)]
        self.layouts = [KubepodsLayout(each, cgroup_root) for each in drivers]

    def scan(self, pod_uids: Container[str] | None = None) -> KubepodsScan:
        """Every container cgroup in the tree; with ``pod_uids``, only those pods' (the swap
        audit's incremental pass, after pod events)."""
        for layout in self.layouts:
            try:
                with open_directory(self.mount, layout.root) as fd:
                    containers = tuple(self._scan_root(layout, fd, pod_uids))
            except (CgroupPathError, FileNotFoundError, NotADirectoryError):
                continue
            return KubepodsScan(layout.driver, "/".join(layout.root), containers)
        wanted = " or ".join(f"{'/'.join(layout.root)!r}" for layout in self.layouts)
        return KubepodsScan(None, None, problem=f"no kubepods cgroup {wanted} under {self.mount}")

    def _scan_root(
        self, layout: KubepodsLayout, root_fd: int, only: Container[str] | None
    ) -> Iterator[CgroupReading]:
        for pod in walk_pods(layout, root_fd, only):
            yield from self._scan_containers(layout, pod)

    def _scan_containers(self, layout: KubepodsLayout, pod: PodCgroup) -> Iterator[CgroupReading]:
        for name, _inode in _subdirectories(pod.fd):
            parsed = layout.container(name)
            if parsed is None:
                continue
            with _Subdirectory(pod.fd, name) as fd:
                if fd is None:
                    continue
                yield CgroupReading(
                    path=f"{pod.path}/{name}",
                    qos=pod.qos,
                    pod_uid=pod.uid,
                    container_id=parsed[1],
                    runtime=parsed[0],
                    swap_max=parse_swap_max(read_file(fd, SWAP_MAX)),
                    swap_current=_parse_int(read_file(fd, SWAP_CURRENT)),
                )

    def write_swap_max(self, path: str, value: int) -> None:
        """Set one container's ``memory.swap.max``; ``CgroupPathError`` if the path is refused."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CgroupPathError(f"refusing swap limit {value!r}")
        components = path.split("/")
        problems = []
        for layout in self.layouts:
            try:
                layout.check_container_path(components)
            except CgroupPathError as error:
                problems.append(str(error))
                continue
            with open_directory(self.mount, components) as fd:
                write_file(fd, SWAP_MAX, str(value))
            return
        raise CgroupPathError("; ".join(problems))
