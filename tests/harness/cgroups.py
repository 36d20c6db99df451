"""Fixture cgroup v2 trees: real directories and files laid out the way kubelet's two cgroup
drivers lay out kubepods, plus the pod objects the API would show for them.

The layouts are spelled out here by hand (not computed by the code under test), so a test
catches a naming mistake in the scanner instead of sharing it::

    systemd:  kubepods.slice/kubepods-pod<uid_>.slice/cri-containerd-<id>.scope    (Guaranteed)
              kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/...
    cgroupfs: kubepods/pod<uid>/<id>, kubepods/burstable/pod<uid>/<id>, kubepods/besteffort/...

Every cgroup directory gets the files a real one has that matter here (``cgroup.procs``,
``memory.max``, ``memory.swap.max``, ``memory.swap.current``), and ``system.slice`` sits
beside kubepods, so ``snapshot`` can prove that nothing outside a target file was written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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


@dataclass
class CgroupTreeBuilder:
    """Builds one node's cgroup2 mount under ``mount`` for ``driver`` and ``runtime``."""

    mount: Path
    driver: Driver
    runtime: str = "containerd"
    version: Literal[1, 2] = 2
    """1: one controller's hierarchy of a v1 node (see ``CgroupV1TreeBuilder``)."""

    def __post_init__(self) -> None:
        self.mount.mkdir(parents=True, exist_ok=True)
        _cgroup_files(self.mount, root=True)
        if self.version == 2:  # what tells a unified (v2) mount from a v1 hierarchy
            (self.mount / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")

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

    def add_container(
        self, uid: str, qos: QOS, cid: str, *, swap_max: str = "max", swap_current: int = 0
    ) -> Path:
        path = self._cgroup(self.pod_dir(uid, qos) / self.container_name(cid))
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
            _cgroup_files(path, root=False)
        return path

    # -- checking -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, tuple[str, str]]:
        """Every entry under the mount: files with content, symlinks with target, dirs."""
        entries: dict[str, tuple[str, str]] = {}
        for directory, dirnames, filenames in os.walk(self.mount, followlinks=False):
            base = Path(directory)
            for name in dirnames + filenames:
                path = base / name
                key = str(path.relative_to(self.mount))
                if path.is_symlink():
                    entries[key] = ("link", str(path.readlink()))
                elif path.is_dir():
                    entries[key] = ("dir", "")
                else:
                    entries[key] = ("file", path.read_text())
        return entries

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.mount))


@dataclass
class CgroupV1TreeBuilder:
    """A cgroup v1 node: the ``cpu,cpuacct`` and ``memory`` hierarchies under ``mount``, each
    laid out by ``driver`` like the v2 tree (kubelet uses the same names on v1)."""

    mount: Path
    driver: Driver

    def __post_init__(self) -> None:
        self.cpu = CgroupTreeBuilder(self.mount / "cpu,cpuacct", self.driver, version=1)
        self.memory = CgroupTreeBuilder(self.mount / "memory", self.driver, version=1)

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
        (self.cpu.pod_dir(uid, qos) / "cpuacct.usage").write_text(f"{usage_ns}\n")
        memory = self.memory.pod_dir(uid, qos)
        (memory / "memory.usage_in_bytes").write_text(f"{usage_in_bytes}\n")
        (memory / "memory.stat").write_text(
            f"cache {total_inactive_file}\nrss 0\ninactive_file 0\n"
            f"total_inactive_file {total_inactive_file}\n"
        )
        if memsw_usage is not None:
            (memory / "memory.memsw.usage_in_bytes").write_text(f"{memsw_usage}\n")


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
