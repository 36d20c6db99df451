"""Container cgroups of the kubepods tree: read each one's swap (and on v1 its memory), and
set a container's ``memory.swap.max``, safely. The swap audit's adapter.

The tree is where ``kubepods.KubepodsFinder`` finds it (the one finder). On cgroup v2 each
container cgroup gives ``memory.swap.max`` (the limit kubelet's LimitedSwap sets) and
``memory.swap.current``. On cgroup v1 there is no ``memory.swap.max``: kubelet cannot apply
LimitedSwap there, so nothing is read as a swap limit; each container gives what v1 has, its
working set and its swap in use (``cgroupstats``). ``memory.memsw.limit_in_bytes`` caps
memory+swap together and is not kubelet's swap limit, so it is not read as one.

The writer accepts only a path shaped like a container cgroup of the layout found, on a v2
node, walks it one directory at a time (see ``cgroupfiles``) and only ever writes
``memory.swap.max``. Paths come from the scan, never from pod UIDs or container IDs of the
API: the audit matches the API's values against the scan's as plain strings.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.node.cgroupfiles import CgroupPathError, open_directory, read_file, write_file
from agent.node.cgroupstats import parse_int, read_v1_memory
from agent.node.kubepods import (
    CgroupDriver,
    KubepodsFinder,
    KubepodsRoot,
    PodCgroup,
    PodQOSDir,
    Subdirectory,
    subdirectories,
    walk_pods,
)

SWAP_MAX = "memory.swap.max"
SWAP_CURRENT = "memory.swap.current"

SwapMax = int | Literal["max"] | None
"""A ``memory.swap.max`` value: bytes, ``"max"`` (unlimited) or ``None`` (missing/garbled,
or a cgroup v1 node, which has none)."""


@dataclass(frozen=True)
class CgroupReading:
    """One container cgroup found in the tree."""

    path: str
    """Relative to ``/sys/fs/cgroup``, ``/``-separated (on v1, in the memory hierarchy:
    ``memory/kubepods/...``)."""
    qos: PodQOSDir
    pod_uid: str
    """As the tree names it, with systemd's ``_`` turned back into ``-``."""
    container_id: str
    runtime: str
    swap_max: SwapMax
    swap_current: int | None
    """Swap in use: ``memory.swap.current`` (v2), memsw minus memory usage (v1)."""
    memory_working_set: int | None = None
    """cgroup v1 only (the one memory value shown there); a v2 scan reads no more than the
    swap audit compares."""


@dataclass(frozen=True)
class KubepodsScan:
    driver: CgroupDriver | None
    """The layout found, ``None`` when there is no kubepods tree."""
    root: str | None
    """The kubepods cgroup relative to ``/sys/fs/cgroup`` (``memory/kubepods`` on v1)."""
    containers: tuple[CgroupReading, ...] = ()
    problem: str | None = None
    version: Literal[1, 2] | None = None
    """The cgroup version of the tree found; ``None`` when there is none."""


def parse_swap_max(text: str | None) -> SwapMax:
    value = (text or "").strip()
    if value == "max":
        return "max"
    return int(value) if value.isdigit() else None


class KubepodsTree:
    """Scan the container cgroups of one node's kubepods tree below ``mount`` (the host's
    ``/sys/fs/cgroup``), and write their swap limits on cgroup v2."""

    def __init__(self, mount: Path, *, driver: str = "auto", cgroup_root: str = "/") -> None:
        self.finder = KubepodsFinder(mount, driver=driver, cgroup_root=cgroup_root)

    @property
    def mount(self) -> Path:
        return self.finder.mount

    def scan(self, pod_uids: Container[str] | None = None) -> KubepodsScan:
        """Every container cgroup in the tree; with ``pod_uids``, only those pods' (the swap
        audit's incremental pass, after pod events)."""
        root = self.finder.find()
        if root is not None:
            try:
                with root.open() as fd:
                    containers = tuple(self._scan_root(root, fd, pod_uids))
            except (CgroupPathError, OSError):
                pass  # gone since it was found: as if never there
            else:
                return KubepodsScan(root.driver, root.path, containers, version=root.version)
        return KubepodsScan(None, None, problem=self.finder.missing())

    def _scan_root(
        self, root: KubepodsRoot, root_fd: int, only: Container[str] | None
    ) -> Iterator[CgroupReading]:
        for pod in walk_pods(root.layout, root_fd, only):
            yield from self._scan_containers(root, pod)

    @staticmethod
    def _scan_containers(root: KubepodsRoot, pod: PodCgroup) -> Iterator[CgroupReading]:
        for name, _inode in subdirectories(pod.fd):
            parsed = root.layout.container(name)
            if parsed is None:
                continue
            with Subdirectory(pod.fd, name) as fd:
                if fd is None:
                    continue
                swap_max: SwapMax
                if root.version == 2:
                    swap_max = parse_swap_max(read_file(fd, SWAP_MAX))
                    swap = parse_int(read_file(fd, SWAP_CURRENT))
                    working_set = None
                else:
                    swap_max = None
                    working_set, swap = read_v1_memory(fd)
                yield CgroupReading(
                    path=f"{root.prefix}{pod.path}/{name}",
                    qos=pod.qos,
                    pod_uid=pod.uid,
                    container_id=parsed[1],
                    runtime=parsed[0],
                    swap_max=swap_max,
                    swap_current=swap,
                    memory_working_set=working_set,
                )

    def write_swap_max(self, path: str, value: int) -> None:
        """Set one container's ``memory.swap.max``; ``CgroupPathError`` if the path is refused
        (not a container cgroup of the tree found) or the node is not cgroup v2."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CgroupPathError(f"refusing swap limit {value!r}")
        root = self.finder.find()
        if root is None:
            raise CgroupPathError(self.finder.missing())
        if root.version != 2:
            raise CgroupPathError(
                f"refusing to write {SWAP_MAX}: the kubepods tree ({root.describe()}) is not "
                "cgroup v2, where kubelet sets no swap limit"
            )
        components = path.split("/")
        root.layout.check_container_path(components)
        with open_directory(root.memory, components) as fd:
            write_file(fd, SWAP_MAX, str(value))
