"""Fixture cgroup trees: real directories and files laid out the way kubelet's two cgroup
drivers lay out kubepods on cgroup v2 and on cgroup v1, plus the pod objects the API would
show for them.

The layouts are spelled out here by hand (not computed by the code under test), so a test
catches a naming mistake in the scanner instead of sharing it::

    systemd:  kubepods.slice/kubepods-pod<uid_>.slice/cri-containerd-<id>.scope    (Guaranteed)
              kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/...
    cgroupfs: kubepods/pod<uid>/<id>, kubepods/burstable/pod<uid>/<id>, kubepods/besteffort/...

On cgroup v2 (``CgroupTreeBuilder``) these sit right under the cgroup2 mount. On cgroup v1
(``CgroupV1TreeBuilder``) ``/sys/fs/cgroup`` is a tmpfs holding one hierarchy per controller
(``memory/kubepods/...``, ``cpu,cpuacct/kubepods/...``, ...) with the same names in each,
and on a hybrid host runc also joins the cgroup2 mount at ``unified`` (hugetlb only, no
memory files), as on a kubelet v1.28 node with containerd, runc and the cgroupfs driver.

Every cgroup directory gets the files a real one of its hierarchy has that matter here
(v2: ``cgroup.procs``, ``memory.max``, ``memory.swap.max``, ``memory.swap.current``; v1
memory: ``memory.limit_in_bytes``, ``memory.usage_in_bytes``, ``memory.memsw.*``...), and
``system.slice`` sits beside kubepods, so ``snapshot`` can prove that nothing outside a
target file was written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.node.filesystems import CGROUP2_SUPER_MAGIC, CGROUP_SUPER_MAGIC, TMPFS_MAGIC
from tests.harness.kubeobjects import PAUSE_IMAGE, container, container_status, pod

Driver = Literal["systemd", "cgroupfs"]
QOS = Literal["guaranteed", "burstable", "besteffort"]
GIB = 2**30
MIB = 2**20

_SCOPE_PREFIX = {"containerd": "cri-containerd-", "crio": "crio-", "docker": "docker-"}
_SCHEME = {"containerd": "containerd://", "crio": "cri-o://", "docker": "docker://"}


def container_id(seed: int) -> str:
    """A 64-hex runtime ID, distinct per seed."""
    return f"{seed:064x}"


Hierarchy = Literal["v2", "memory", "cpu,cpuacct", "hybrid-unified", "v1"]
"""What a tree's cgroup directories hold: ``v2`` a unified (cgroup2) mount; ``memory`` and
``cpu,cpuacct`` those cgroup v1 hierarchies; ``hybrid-unified`` the cgroup2 mount of a
hybrid host (hugetlb only: no memory or CPU files); ``v1`` any other v1 controller."""


@dataclass
class CgroupTreeBuilder:
    """Builds one cgroup hierarchy under ``mount`` for ``driver`` and ``runtime``: a node's
    whole cgroup2 mount by default, or one hierarchy of a v1 node (``CgroupV1TreeBuilder``)."""

    mount: Path
    driver: Driver
    runtime: str = "containerd"
    hierarchy: Hierarchy = "v2"
    memsw: bool = True
    """v1 memory hierarchy: swap accounting on (``memory.memsw.*`` files exist)."""

    def __post_init__(self) -> None:
        self.mount.mkdir(parents=True, exist_ok=True)
        self._files(self.mount, root=True)
        # What tells a cgroup2 mount from a v1 hierarchy or the tmpfs above them.
        if self.hierarchy == "v2":
            (self.mount / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        elif self.hierarchy == "hybrid-unified":
            (self.mount / "cgroup.controllers").write_text("hugetlb\n")

    def fs_magic(self, path: Path) -> int | None:
        """What ``statfs`` would say of ``path`` on a real v2 host (a tmp dir cannot say it)."""
        return CGROUP2_SUPER_MAGIC if path == self.mount and self.hierarchy == "v2" else None

    # -- layout ---------------------------------------------------------------------------

    @property
    def kubepods(self) -> Path:
        name = "kubepods.slice" if self.driver == "systemd" else "kubepods"
        return self._cgroup(self.mount / name)

    def qos_dir(self, qos: QOS) -> Path:
        if qos == "guaranteed":
            return self.kubepods
        name = f"kubepods-{qos}.slice" if self.driver == "systemd" else qos
        return self._cgroup(self.kubepods / name)

    def pod_dir_name(self, uid: str, qos: QOS) -> str:
        if self.driver == "systemd":
            middle = "" if qos == "guaranteed" else f"-{qos}"
            return f"kubepods{middle}-pod{uid.replace('-', '_')}.slice"
        return f"pod{uid}"

    def pod_dir(self, uid: str, qos: QOS) -> Path:
        return self._cgroup(self.qos_dir(qos) / self.pod_dir_name(uid, qos))

    def container_name(self, cid: str) -> str:
        if self.driver == "systemd":
            return f"{_SCOPE_PREFIX[self.runtime]}{cid}.scope"
        return f"crio-{cid}" if self.runtime == "crio" else cid

    def container_dir(self, uid: str, qos: QOS, cid: str) -> Path:
        """A container's cgroup (made with its pod's if missing), with no values written."""
        return self._cgroup(self.pod_dir(uid, qos) / self.container_name(cid))

    def add_container(
        self, uid: str, qos: QOS, cid: str, *, swap_max: str = "max", swap_current: int = 0
    ) -> Path:
        """A cgroup v2 container with its swap files."""
        assert self.hierarchy == "v2", "v1 containers: CgroupV1TreeBuilder.add_container"
        path = self.container_dir(uid, qos, cid)
        (path / "memory.swap.max").write_text(f"{swap_max}\n")
        (path / "memory.swap.current").write_text(f"{swap_current}\n")
        return path

    def pod_usage(
        self,
        uid: str,
        qos: QOS,
        *,
        usage_usec: int,
        memory_current: int,
        inactive_file: int,
        swap_current: int = 0,
    ) -> Path:
        """cgroup v2 usage files of a pod cgroup (what the NodeReport reads)."""
        path = self.pod_dir(uid, qos)
        (path / "cpu.stat").write_text(
            f"usage_usec {usage_usec}\nuser_usec {usage_usec // 2}\nsystem_usec {usage_usec // 2}\n"
        )
        (path / "memory.current").write_text(f"{memory_current}\n")
        (path / "memory.stat").write_text(
            f"anon {memory_current - inactive_file}\nfile {inactive_file}\n"
            f"active_file 0\ninactive_file {inactive_file}\n"
        )
        (path / "memory.swap.current").write_text(f"{swap_current}\n")
        return path

    def system_slice(self, *, swap_max: str = "max", io_latency: str = "") -> Path:
        path = self._cgroup(self.mount / "system.slice")
        (path / "memory.swap.max").write_text(f"{swap_max}\n")
        (path / "io.latency").write_text(io_latency)
        self._cgroup(path / "kubelet.service")
        return path

    def _cgroup(self, path: Path) -> Path:
        if not path.is_dir():
            path.mkdir(parents=True)
            self._files(path, root=False)
        return path

    def _files(self, path: Path, *, root: bool) -> None:
        """The files a new cgroup directory of this hierarchy has (the kernel's, not ours)."""
        (path / "cgroup.procs").write_text("")
        if self.hierarchy == "v2":
            _cgroup_files(path, root=root)
            return
        if self.hierarchy == "hybrid-unified":
            (path / "cgroup.subtree_control").write_text("")
            return
        (path / "tasks").write_text("")
        (path / "notify_on_release").write_text("0\n")
        if self.hierarchy == "memory":
            (path / "memory.usage_in_bytes").write_text("0\n")
            (path / "memory.stat").write_text("cache 0\nrss 0\ntotal_inactive_file 0\n")
            (path / "memory.limit_in_bytes").write_text(f"{V1_UNLIMITED}\n")
            if self.memsw:
                (path / "memory.memsw.limit_in_bytes").write_text(f"{V1_UNLIMITED}\n")
                (path / "memory.memsw.usage_in_bytes").write_text("0\n")
        elif self.hierarchy == "cpu,cpuacct":
            (path / "cpuacct.usage").write_text("0\n")
            (path / "cpu.shares").write_text("1024\n")

    # -- checking -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, tuple[str, str]]:
        """Every entry under the mount: files with content, symlinks with target, dirs."""
        return _snapshot(self.mount)

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.mount))


V1_HIERARCHIES: dict[str, Hierarchy] = {
    "blkio": "v1",
    "cpu,cpuacct": "cpu,cpuacct",
    "cpuset": "v1",
    "devices": "v1",
    "freezer": "v1",
    "hugetlb": "v1",
    "memory": "memory",
    "net_cls,net_prio": "v1",
    "perf_event": "v1",
    "pids": "v1",
}
V1_LINKS = {
    "cpu": "cpu,cpuacct",
    "cpuacct": "cpu,cpuacct",
    "net_cls": "net_cls,net_prio",
    "net_prio": "net_cls,net_prio",
}
V1_UNLIMITED = 9223372036854771712
"""What a v1 ``memory.limit_in_bytes`` reads without a limit (LONG_MAX rounded to pages)."""


@dataclass
class CgroupV1TreeBuilder:
    """A cgroup v1 node under ``mount`` (``/sys/fs/cgroup``), hybrid by default, laid out as
    kubelet v1.28 with containerd and runc lays it out (the cgroupfs driver by default)::

        <mount>/                                   tmpfs
          memory/kubepods/pod<uid>/<id>            Guaranteed, directly under kubepods
          memory/kubepods/burstable/pod<uid>/<id>, memory/kubepods/besteffort/pod<uid>/<id>
          cpu,cpuacct/kubepods/...                 cpu and cpuacct are symlinks to it
          blkio/, cpuset/, pids/, hugetlb/, ...    every other controller, the same names
          unified/kubepods/.../<id>                hybrid only: the cgroup2 mount runc also
                                                   joins (hugetlb only, no memory files)
          systemd/                                 name=systemd

    With the systemd driver the names are the v2 ones (``kubepods.slice/...``) in every
    hierarchy. ``memsw``: swap accounting on (``memory.memsw.*``), as on a kernel with
    ``swapaccount=1``.
    """

    mount: Path
    driver: Driver = "cgroupfs"
    runtime: str = "containerd"
    hybrid: bool = True
    memsw: bool = True

    def __post_init__(self) -> None:
        self.mount.mkdir(parents=True, exist_ok=True)
        self.trees = {
            name: CgroupTreeBuilder(
                self.mount / name, self.driver, self.runtime, hierarchy, memsw=self.memsw
            )
            for name, hierarchy in V1_HIERARCHIES.items()
        }
        for link, target in V1_LINKS.items():
            (self.mount / link).symlink_to(target)
        (self.mount / "systemd").mkdir(exist_ok=True)
        (self.mount / "systemd" / "cgroup.procs").write_text("")
        if self.hybrid:
            self.trees["unified"] = CgroupTreeBuilder(
                self.mount / "unified", self.driver, self.runtime, "hybrid-unified"
            )
        self.memory = self.trees["memory"]
        self.cpu = self.trees["cpu,cpuacct"]

    def fs_magic(self, path: Path) -> int | None:
        """What ``statfs`` would say on a real host: tmpfs at the mount, cgroup2 at
        ``unified`` (hybrid), a v1 hierarchy below."""
        if path == self.mount:
            return TMPFS_MAGIC
        if self.hybrid and path == self.mount / "unified":
            return CGROUP2_SUPER_MAGIC
        return CGROUP_SUPER_MAGIC if path.parent == self.mount else None

    @property
    def kubepods(self) -> Path:
        """The memory hierarchy's kubepods cgroup (made in every hierarchy)."""
        for tree in self.trees.values():
            tree.kubepods  # noqa: B018 - making it is the point
        return self.memory.kubepods

    def pod_dirs(self, uid: str, qos: QOS) -> dict[str, Path]:
        """The pod's cgroup in every hierarchy, by hierarchy name."""
        return {name: tree.pod_dir(uid, qos) for name, tree in self.trees.items()}

    def add_container(
        self,
        uid: str,
        qos: QOS,
        cid: str,
        *,
        usage_in_bytes: int = 0,
        total_inactive_file: int = 0,
        memsw_usage: int | None = None,
        usage_ns: int = 0,
    ) -> Path:
        """A container cgroup in every hierarchy (runc joins them all), with its memory
        usage (``memsw_usage``: memory+swap, default no swap) and CPU time; returns the
        memory hierarchy's directory."""
        for tree in self.trees.values():
            tree.container_dir(uid, qos, cid)
        memory = self.memory.container_dir(uid, qos, cid)
        _v1_memory(memory, usage_in_bytes, total_inactive_file, memsw_usage, memsw=self.memsw)
        (self.cpu.container_dir(uid, qos, cid) / "cpuacct.usage").write_text(f"{usage_ns}\n")
        return memory

    def pod_usage(
        self,
        uid: str,
        qos: QOS,
        *,
        usage_ns: int,
        usage_in_bytes: int,
        total_inactive_file: int,
        memsw_usage: int | None = None,
    ) -> None:
        """The pod cgroup's usage files (what the NodeReport reads on v1)."""
        dirs = self.pod_dirs(uid, qos)
        (dirs["cpu,cpuacct"] / "cpuacct.usage").write_text(f"{usage_ns}\n")
        _v1_memory(
            dirs["memory"], usage_in_bytes, total_inactive_file, memsw_usage, memsw=self.memsw
        )

    def snapshot(self) -> dict[str, tuple[str, str]]:
        """Every entry under the mount, every hierarchy's (see ``CgroupTreeBuilder``)."""
        return _snapshot(self.mount)


def _snapshot(mount: Path) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    for directory, dirnames, filenames in os.walk(mount, followlinks=False):
        base = Path(directory)
        for name in dirnames + filenames:
            path = base / name
            key = str(path.relative_to(mount))
            if path.is_symlink():
                entries[key] = ("link", str(path.readlink()))
            elif path.is_dir():
                entries[key] = ("dir", "")
            else:
                entries[key] = ("file", path.read_text())
    return entries


def _v1_memory(
    path: Path, usage: int, inactive_file: int, memsw_usage: int | None, *, memsw: bool
) -> None:
    (path / "memory.usage_in_bytes").write_text(f"{usage}\n")
    (path / "memory.stat").write_text(
        f"cache {inactive_file}\nrss {usage - inactive_file}\ninactive_file {inactive_file}\n"
        f"total_inactive_file {inactive_file}\n"
    )
    if memsw:
        total = usage if memsw_usage is None else memsw_usage
        (path / "memory.memsw.usage_in_bytes").write_text(f"{total}\n")


def _cgroup_files(path: Path, *, root: bool) -> None:
    (path / "cgroup.procs").write_text("")
    (path / "cgroup.subtree_control").write_text("cpu io memory pids\n")
    if not root:  # the root cgroup has no limits, as on a real host
        (path / "memory.max").write_text("max\n")
        (path / "memory.swap.max").write_text("max\n")
        (path / "memory.swap.current").write_text("0\n")


def changed_files(
    before: Mapping[str, tuple[str, str]], after: Mapping[str, tuple[str, str]]
) -> dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]]:
    """Entries added, removed or changed between two snapshots."""
    return {
        key: (before.get(key), after.get(key))
        for key in before.keys() | after.keys()
        if before.get(key) != after.get(key)
    }


@dataclass(frozen=True)
class ContainerFixture:
    """A container of a fixture pod: its cgroup's runtime ID (``None``: not started yet)."""

    name: str
    cid: str | None
    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    kind: Literal["containers", "initContainers", "ephemeralContainers"] = "containers"

    def spec(self) -> dict[str, Any]:
        """This container in the pod's spec (``resources`` even when empty, as stored)."""
        return container(self.name, PAUSE_IMAGE, requests=self.requests, limits=self.limits)

    def status(self, runtime: str) -> dict[str, Any]:
        """Its entry in the pod's status: ready, with the ID the runtime gave it."""
        cid = None if self.cid is None else f"{_SCHEME[runtime]}{self.cid}"
        return container_status(self.name, container_id=cid)


_STATUS_KEY = {
    "containers": "containerStatuses",
    "initContainers": "initContainerStatuses",
    "ephemeralContainers": "ephemeralContainerStatuses",
}


def pod_object(
    name: str,
    uid: str | None,
    *containers: ContainerFixture,
    runtime: str = "containerd",
    node: str = "node-1",
    **fields: Any,
) -> dict[str, Any]:
    """A Running pod on ``node`` as the API shows it for these containers: their specs, and
    their statuses carrying the container IDs the scanner matches against the cgroup tree.
    ``fields`` are ``kubeobjects.pod``'s (namespace, priority, annotations, phase...)."""
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {}
    for kind, status_key in _STATUS_KEY.items():
        if listed := [c for c in containers if c.kind == kind]:
            spec[kind] = [c.spec() for c in listed]
            status[status_key] = [c.status(runtime) for c in listed]
    containers_spec = spec.pop("containers", ())
    fields = {"phase": "Running", **fields}
    return pod(name, node, uid=uid, containers=containers_spec, spec=spec, status=status, **fields)
