"""The one cgroup finder: every reader (swap scan, NodeReport usage, doctor) finds the same
kubepods tree and the same pods, on cgroup v2 (systemd and cgroupfs drivers) and on a hybrid
cgroup v1 host, whose cgroup2 ``unified`` mount is never taken for the tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.node.cgroupfiles import CgroupPathError
from agent.node.containercgroups import KubepodsTree
from agent.node.kubepods import KubepodsFinder
from agent.node.podusage import PodUsageReader
from tests.harness.cgroups import (
    MIB,
    QOS,
    CgroupTreeBuilder,
    CgroupV1TreeBuilder,
    changed_files,
    container_id,
)

PODS: dict[str, QOS] = {
    "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b": "guaranteed",
    "2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d": "burstable",
    "3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e": "besteffort",
}
LAYOUTS = [
    pytest.param(2, "systemd", "kubepods.slice", id="v2-systemd"),
    pytest.param(2, "cgroupfs", "kubepods", id="v2-cgroupfs"),
    pytest.param(1, "cgroupfs", "memory/kubepods", id="v1-hybrid-cgroupfs"),
    pytest.param(1, "systemd", "memory/kubepods.slice", id="v1-hybrid-systemd"),
]


def build(mount: Path, version: int, driver: str) -> CgroupTreeBuilder | CgroupV1TreeBuilder:
    """One pod of each QoS class, one container each, on the given layout."""
    if version == 2:
        v2 = CgroupTreeBuilder(mount, driver)  # type: ignore[arg-type]
        for seed, (uid, qos) in enumerate(PODS.items(), start=1):
            v2.add_container(uid, qos, container_id(seed), swap_current=seed)
            v2.pod_usage(uid, qos, usage_usec=1, memory_current=MIB, inactive_file=0)
        return v2
    v1 = CgroupV1TreeBuilder(mount, driver)  # type: ignore[arg-type]
    for seed, (uid, qos) in enumerate(PODS.items(), start=1):
        v1.add_container(uid, qos, container_id(seed), usage_in_bytes=seed * MIB)
        v1.pod_usage(uid, qos, usage_ns=1000, usage_in_bytes=MIB, total_inactive_file=0)
    return v1


@pytest.mark.parametrize(("version", "driver", "path"), LAYOUTS)
def test_every_reader_finds_the_same_tree_and_pods(
    tmp_path: Path, version: int, driver: str, path: str
) -> None:
    """The finder, the swap scan and the NodeReport's usage reader agree on the tree and on
    every pod of every QoS class, whatever the layout."""
    build(tmp_path, version, driver)
    root = KubepodsFinder(tmp_path).find()
    assert root is not None
    assert (root.version, root.driver.value, root.path) == (version, driver, path)
    assert root.describe() == f"{path} ({driver}, cgroup v{version})"
    scan = KubepodsTree(tmp_path).scan()
    assert (scan.version, scan.root, scan.driver) == (version, path, root.driver)
    assert {reading.pod_uid for reading in scan.containers} == set(PODS)
    assert all(reading.path.startswith(f"{path}/") for reading in scan.containers)
    usage = PodUsageReader(tmp_path).read()
    assert (usage.cgroup_version, usage.driver) == (version, root.driver)
    assert set(usage.pods) == set(PODS)


def test_v1_containers_carry_v1_values_and_no_swap_limit(tmp_path: Path) -> None:
    """On v1 a container gives its working set and swap in use (memsw minus usage); there is
    no memory.swap.max to read, so none is reported."""
    v1 = CgroupV1TreeBuilder(tmp_path)
    uid = next(iter(PODS))
    v1.add_container(
        uid,
        "burstable",
        container_id(7),
        usage_in_bytes=300 * MIB,
        total_inactive_file=100 * MIB,
        memsw_usage=310 * MIB,
    )
    (reading,) = KubepodsTree(tmp_path).scan().containers
    assert reading.path == f"memory/kubepods/burstable/pod{uid}/{container_id(7)}"
    assert (reading.memory_working_set, reading.swap_current, reading.swap_max) == (
        200 * MIB,
        10 * MIB,
        None,
    )


def test_v1_without_swap_accounting_has_no_swap_value(tmp_path: Path) -> None:
    """Without memsw (no swapaccount), swap in use is unknown rather than zero."""
    v1 = CgroupV1TreeBuilder(tmp_path, memsw=False)
    v1.add_container(next(iter(PODS)), "besteffort", container_id(8), usage_in_bytes=MIB)
    (reading,) = KubepodsTree(tmp_path).scan().containers
    assert (reading.memory_working_set, reading.swap_current) == (MIB, None)


def test_the_hybrid_unified_mount_is_never_taken_for_the_tree(tmp_path: Path) -> None:
    """runc's containers under ``unified`` (hugetlb only) are not the tree: with the memory
    hierarchy's tree gone, nothing is found, rather than a tree without memory files."""
    v1 = CgroupV1TreeBuilder(tmp_path)
    v1.add_container(next(iter(PODS)), "burstable", container_id(1))
    assert (tmp_path / "unified" / "kubepods" / "burstable").is_dir()
    shutil.rmtree(tmp_path / "memory" / "kubepods")
    finder = KubepodsFinder(tmp_path)
    assert finder.find() is None
    scan = KubepodsTree(tmp_path).scan()
    assert (scan.driver, scan.containers) == (None, ())
    assert scan.problem == finder.missing()
    assert str(tmp_path / "memory") in finder.missing()
    assert PodUsageReader(tmp_path).read().pods == {}


@pytest.mark.parametrize("cpu", ["cpu,cpuacct", "cpuacct"])
def test_v1_cpu_time_comes_from_wherever_cpuacct_is_mounted(tmp_path: Path, cpu: str) -> None:
    """cpuacct mounted with cpu (``cpu,cpuacct``, the usual) or alone (``cpuacct``) both
    give pod CPU time."""
    v1 = CgroupV1TreeBuilder(tmp_path)
    uid = next(iter(PODS))
    v1.pod_usage(uid, "burstable", usage_ns=5_000_000, usage_in_bytes=MIB, total_inactive_file=0)
    if cpu == "cpuacct":  # mounted apart: a directory of its own, no comma hierarchy
        (tmp_path / "cpuacct").unlink()
        (tmp_path / "cpu,cpuacct").rename(tmp_path / "cpuacct")
    root = KubepodsFinder(tmp_path).find()
    assert root is not None
    assert root.cpu == tmp_path / cpu
    assert PodUsageReader(tmp_path).read().pods[uid].cpu_usec == 5000


def test_no_swap_limit_is_written_on_a_v1_node(tmp_path: Path) -> None:
    """Enforcement never writes on cgroup v1, not even into a ``memory.swap.max`` planted in
    a container cgroup of the right shape: the kubelet sets no swap limit there."""
    v1 = CgroupV1TreeBuilder(tmp_path)
    uid = next(iter(PODS))
    container = v1.add_container(uid, "burstable", container_id(1))
    (container / "memory.swap.max").write_text("max\n")
    before = v1.snapshot()
    tree = KubepodsTree(tmp_path)
    path = f"kubepods/burstable/pod{uid}/{container_id(1)}"
    with pytest.raises(CgroupPathError, match="not cgroup v2"):
        tree.write_swap_max(path, 4096)
    assert changed_files(before, v1.snapshot()) == {}
