"""The pod counter files kept open between usage samples (cgroup v2 fixture trees)."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent.node.podusage import PodUsageReader
from tests.harness.cgroups import MIB, CgroupTreeBuilder

WEB = "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b"
DB = "2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
JOB = "3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"


def _open_fds() -> int:
    return sum(1 for _ in Path("/proc/self/fd").iterdir())


def _tree(tmp_path: Path) -> CgroupTreeBuilder:
    tree = CgroupTreeBuilder(tmp_path, "systemd")
    for number, (uid, qos) in enumerate(
        [(WEB, "burstable"), (DB, "guaranteed"), (JOB, "besteffort")]
    ):
        tree.pod_usage(
            uid,
            qos,  # type: ignore[arg-type]
            usage_usec=number,
            memory_current=(number + 1) * MIB,
            inactive_file=0,
        )
    return tree


def test_kept_files_see_every_new_value(tmp_path: Path) -> None:
    """Files read through kept fds give each sample's new content, and the second sample opens
    no further file."""
    tree = _tree(tmp_path)
    reader = PodUsageReader(tmp_path)
    reader.read()
    fds = _open_fds()
    tree.pod_usage(WEB, "burstable", usage_usec=7_000_000, memory_current=9 * MIB, inactive_file=0)
    scan = reader.read()
    assert scan.pods[WEB].cpu_usec == 7_000_000
    assert scan.pods[WEB].memory_working_set == 9 * MIB
    assert len(reader.kept) == 3
    assert _open_fds() == fds


def test_a_removed_pod_closes_its_files(tmp_path: Path) -> None:
    """A pod whose cgroup left the tree leaves the scan, and its files are closed."""
    tree = _tree(tmp_path)
    reader = PodUsageReader(tmp_path)
    before = _open_fds()
    reader.read()
    assert _open_fds() == before + 3 * 4
    shutil.rmtree(tree.pod_dir(JOB, "besteffort"))
    scan = reader.read()
    assert set(scan.pods) == {WEB, DB}
    assert len(reader.kept) == 2
    assert _open_fds() == before + 2 * 4


def test_a_cgroup_made_again_under_its_name_is_read_anew(tmp_path: Path) -> None:
    """A pod directory made again under the same name (another inode) is opened again: its
    old files are not read."""
    tree = _tree(tmp_path)
    reader = PodUsageReader(tmp_path)
    reader.read()
    shutil.rmtree(tree.pod_dir(DB, "guaranteed"))
    tree.pod_usage(DB, "guaranteed", usage_usec=42, memory_current=5 * MIB, inactive_file=0)
    scan = reader.read()
    assert scan.pods[DB].cpu_usec == 42
    assert scan.pods[DB].memory_working_set == 5 * MIB


def test_pods_past_the_budget_are_read_afresh(tmp_path: Path) -> None:
    """With room to keep one pod's files open, every pod is still read, each sample."""
    tree = _tree(tmp_path)
    reader = PodUsageReader(tmp_path, kept_pods=1)
    reader.read()
    tree.pod_usage(JOB, "besteffort", usage_usec=5, memory_current=3 * MIB, inactive_file=0)
    tree.pod_usage(DB, "guaranteed", usage_usec=6, memory_current=3 * MIB, inactive_file=0)
    tree.pod_usage(WEB, "burstable", usage_usec=7, memory_current=3 * MIB, inactive_file=0)
    scan = reader.read()
    assert {uid: pod.cpu_usec for uid, pod in scan.pods.items()} == {WEB: 7, DB: 6, JOB: 5}
    assert len(reader.kept) == 1


def test_a_pod_missing_a_file_is_read_without_keeping_it(tmp_path: Path) -> None:
    """A pod cgroup without ``memory.swap.current`` (swap accounting off) is read each time,
    with no swap figure, and none of its files stays open."""
    tree = _tree(tmp_path)
    (tree.pod_dir(WEB, "burstable") / "memory.swap.current").unlink()
    reader = PodUsageReader(tmp_path)
    scan = reader.read()
    assert scan.pods[WEB].swap_bytes is None
    assert scan.pods[WEB].cpu_usec == 0
    assert len(reader.kept) == 2


def test_close_closes_every_kept_file(tmp_path: Path) -> None:
    """Closing the reader closes every file it kept."""
    _tree(tmp_path)
    before = _open_fds()
    reader = PodUsageReader(tmp_path)
    reader.read()
    reader.close()
    assert _open_fds() == before
    assert len(reader.kept) == 0
