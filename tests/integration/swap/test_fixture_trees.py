"""Audit and enforcement against real fixture cgroup trees, for both cgroup drivers.

These run the real scanner, the real audit and the real writer on real files. Every file in
the fixture tree (kubepods and system.slice alike) is snapshotted before and after, so "only
the drifted containers' files were written" is checked over the whole tree, attacks
included: crafted pod UIDs and container IDs (``../../system.slice``), symlinked pod and
container cgroups, a symlinked ``memory.swap.max``, and (as root) a bind mount.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.config.swap import MemorySwapConfig
from agent.node.cgroupfiles import CgroupPathError
from agent.node.containercgroups import KubepodsTree
from agent.swap.audit import AuditReport, DriftState, build_report, enforce_plan
from agent.swap.summary import node_summary
from tests.harness.cgroups import (
    GIB,
    QOS,
    ContainerFixture,
    changed_files,
    container_id,
    pod_object,
)
from tests.integration.swap.conftest import MakeSwapNode, SwapNode
from tests.integration.swap.swap_scenario import EVIL, build_scenario

DRIVERS = [
    pytest.param("systemd", "containerd", id="systemd-containerd"),
    pytest.param("systemd", "crio", id="systemd-crio"),
    pytest.param("cgroupfs", "containerd", id="cgroupfs-containerd"),
    pytest.param("cgroupfs", "crio", id="cgroupfs-crio"),
]
LIMITED = MemorySwapConfig(swap_behavior="LimitedSwap")


def uid(seed: int) -> str:
    return f"{seed:08d}-0000-4000-8000-{seed:012d}"


def audit(
    node: SwapNode, pods: list[dict[str, Any]], config: MemorySwapConfig = LIMITED
) -> tuple[KubepodsTree, AuditReport]:
    facts = node.facts()
    tree = KubepodsTree(node.paths.cgroup_root)
    scan = tree.scan()
    summary = node_summary(
        config,
        memory=facts.memory,
        cgroups=facts.cgroups,
        noswap=facts.tmpfs_noswap,
        scan=scan,
        page_size=4096,
    )
    return tree, build_report(summary, pods, scan)


@pytest.mark.parametrize(("driver", "runtime"), DRIVERS)
def test_drift_is_detected(make_swap_node: MakeSwapNode, driver: str, runtime: str) -> None:
    """Drifted containers (``max`` where 268435456 is due, 4096 where 0 is) are found."""
    node = make_swap_node(driver, runtime=runtime)
    scenario = build_scenario(node.cgroups, lambda pod: pod, uid)
    _, report = audit(node, scenario.pods)
    assert report.summary.driver == driver
    drifted = {f"{row.cgroup}/memory.swap.max": row.expected.bytes for row in report.drifted}
    assert drifted == {path: int(value) for path, value in scenario.drifted.items()}
    states = {row.container: row.state for row in report.containers}
    assert states["postgres"] is DriftState.OK
    assert states["sidecar"] is DriftState.OK
    assert states["migrate"] is DriftState.NO_CGROUP
    assert states["evil"] is DriftState.NO_CGROUP  # its scope is a symlink: not entered
    assert states["linked"] is DriftState.UNKNOWN  # its swap file is a symlink: not read
    assert states["victim"] is DriftState.NO_CGROUP  # its pod cgroup is a symlink
    assert states["x"] is DriftState.NO_CGROUP  # crafted UID and container ID match nothing
    assert [cgroup.path for cgroup in report.unmapped] == list(scenario.unmapped)


@pytest.mark.parametrize(("driver", "runtime"), DRIVERS)
def test_enforce_writes_only_the_drifted_containers_files(
    make_swap_node: MakeSwapNode, driver: str, runtime: str
) -> None:
    """After enforcement exactly the drifted files changed, to kubelet's values; nothing else."""
    node = make_swap_node(driver, runtime=runtime)
    scenario = build_scenario(node.cgroups, lambda pod: pod, uid)
    tree, report = audit(node, scenario.pods)
    before = node.cgroups.snapshot()
    for write in enforce_plan(report):
        tree.write_swap_max(write.path, write.value)
    after = node.cgroups.snapshot()
    assert changed_files(before, after) == {
        path: (before[path], ("file", value)) for path, value in scenario.drifted.items()
    }
    _, again = audit(node, scenario.pods)
    assert again.drifted == ()


@pytest.mark.parametrize(("driver", "runtime"), DRIVERS)
def test_crafted_paths_never_write_outside_kubepods(
    make_swap_node: MakeSwapNode, driver: str, runtime: str
) -> None:
    """Handing the writer crafted or symlinked paths directly is refused, and nothing changes."""
    node = make_swap_node(driver, runtime=runtime)
    build_scenario(node.cgroups, lambda pod: pod, uid)
    tree = KubepodsTree(node.paths.cgroup_root)
    cgroups = node.cgroups
    root = cgroups.relative(cgroups.kubepods)
    burstable = cgroups.relative(cgroups.qos_dir("burstable"))
    web = cgroups.relative(cgroups.pod_dir(uid(2), "burstable"))
    hijack = f"{burstable}/{cgroups.pod_dir_name(uid(5), 'burstable')}"
    crafted = [
        "system.slice",
        f"{root}/{EVIL}",
        f"{root}/../system.slice",
        f"{burstable}/{EVIL}/{cgroups.container_name(container_id(1))}",
        f"{web}/{EVIL}",
        f"{web}/{cgroups.container_name(container_id(7))}",  # symlink into system.slice
        f"{hijack}/{cgroups.container_name(container_id(6))}",  # symlinked pod cgroup
        f"{web}/{cgroups.container_name(container_id(8))}/../../../../system.slice",
        f"/{web}/{cgroups.container_name(container_id(3))}",
        f"{web}//{cgroups.container_name(container_id(3))}",
    ]
    before = cgroups.snapshot()
    for path in crafted:
        with pytest.raises(CgroupPathError):
            tree.write_swap_max(path, 0)
    with pytest.raises(CgroupPathError):  # the file itself is a symlink into system.slice
        tree.write_swap_max(f"{web}/{cgroups.container_name(container_id(8))}", 0)
    with pytest.raises(CgroupPathError):
        tree.write_swap_max(f"{web}/{cgroups.container_name(container_id(3))}", -1)
    assert changed_files(before, cgroups.snapshot()) == {}


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_bind_mount_inside_kubepods_is_not_crossed(make_swap_node: MakeSwapNode) -> None:
    """A container cgroup that is really system.slice bind-mounted is refused by mount ID."""
    node = make_swap_node("systemd")
    cgroups = node.cgroups
    app = ContainerFixture("app", container_id(3), {"memory": "1Gi"}, {"memory": "2Gi"})
    pod = pod_object("web", uid(2), app)
    scope = cgroups.add_container(uid(2), "burstable", container_id(3), swap_max="max")
    system = cgroups.mount / "system.slice"
    subprocess.run(["mount", "--bind", str(system), str(scope)], check=True)
    try:
        tree, report = audit(node, [pod])
        (row,) = report.drifted  # system.slice's "max" shows through the mount
        before = cgroups.snapshot()
        with pytest.raises(CgroupPathError, match="mount point"):
            tree.write_swap_max(row.cgroup or "", row.expected.bytes)
        assert changed_files(before, cgroups.snapshot()) == {}
    finally:
        subprocess.run(["umount", str(scope)], check=True)
    assert (system / "memory.swap.max").read_text() == "max\n"


def test_guaranteed_burstable_and_besteffort_pods_are_all_found(
    make_swap_node: MakeSwapNode,
) -> None:
    """All three QoS placements (directly under kubepods, or under their QoS cgroup) scan."""
    node = make_swap_node("cgroupfs")
    placements: tuple[QOS, ...] = ("guaranteed", "burstable", "besteffort")
    for seed, qos in enumerate(placements, start=1):
        node.cgroups.add_container(uid(seed), qos, container_id(seed))
    scan = KubepodsTree(node.paths.cgroup_root).scan()
    assert sorted((r.qos.value, r.pod_uid) for r in scan.containers) == [
        ("besteffort", uid(3)),
        ("burstable", uid(2)),
        ("guaranteed", uid(1)),
    ]


@pytest.mark.parametrize(("driver", "runtime"), DRIVERS)
def test_a_scan_limited_to_some_pods_reads_only_theirs(
    make_swap_node: MakeSwapNode, driver: str, runtime: str
) -> None:
    """The incremental audit's scan finds the named pods' containers, in any QoS placement,
    and none of the others'."""
    node = make_swap_node(driver, runtime=runtime)
    placements: tuple[QOS, ...] = ("guaranteed", "burstable", "besteffort") * 2
    for seed, qos in enumerate(placements, start=1):
        node.cgroups.add_container(uid(seed), qos, container_id(seed))
    wanted = frozenset({uid(1), uid(5), uid(6)})
    scan = KubepodsTree(node.paths.cgroup_root).scan(wanted)
    assert scan.driver is not None
    assert scan.driver.value == driver
    assert sorted((r.qos.value, r.pod_uid) for r in scan.containers) == [
        ("besteffort", uid(6)),
        ("burstable", uid(5)),
        ("guaranteed", uid(1)),
    ]
    assert KubepodsTree(node.paths.cgroup_root).scan(frozenset()).containers == ()


def test_no_kubepods_tree_is_reported_not_raised(tmp_path: Path) -> None:
    """A node without kubepods (not a Kubernetes node yet) scans empty, with the reason."""
    scan = KubepodsTree(tmp_path).scan()
    assert (scan.driver, scan.containers) == (None, ())
    assert scan.problem is not None
    assert "kubepods" in scan.problem


def test_kubelet_cgroup_root_is_honoured(tmp_path: Path) -> None:
    """With kubelet's cgroupRoot /kubelet (kind), kubepods is found one level down."""
    mount = tmp_path / "cgroup"
    scope = (
        mount
        / "kubelet.slice"
        / "kubelet-kubepods.slice"
        / "kubelet-kubepods-burstable.slice"
        / f"kubelet-kubepods-burstable-pod{uid(1).replace('-', '_')}.slice"
        / f"cri-containerd-{container_id(1)}.scope"
    )
    scope.mkdir(parents=True)
    (mount / "cgroup.controllers").write_text("memory\n")  # a cgroup2 mount, as on a v2 host
    (scope / "memory.swap.max").write_text("max\n")
    tree = KubepodsTree(mount, driver="systemd", cgroup_root="/kubelet")
    (reading,) = tree.scan().containers
    assert (reading.pod_uid, reading.swap_max) == (uid(1), "max")
    tree.write_swap_max(reading.path, 4 * GIB)
    assert (scope / "memory.swap.max").read_text() == str(4 * GIB)
