"""Node facts read from fixture host trees: swap, cgroups, kernel, user namespaces."""

from pathlib import Path

import pytest

from agent.node.cgroups import CgroupMode, mode_from_magic, own_cgroup, read_cgroups
from agent.node.facts import collect_node_facts
from agent.node.filesystems import CGROUP2_SUPER_MAGIC, TMPFS_MAGIC
from agent.node.kernel import in_user_namespace, parse_kernel_version, read_kernel
from agent.node.memory import parse_proc_swaps, read_memory
from tests.harness.cgroups import CgroupV1TreeBuilder
from tests.harness.hosttree import GIB, HostTree


@pytest.fixture
def tree(tmp_path: Path) -> HostTree:
    return HostTree(tmp_path).standard()


def _v2(path: Path) -> int | None:
    return CGROUP2_SUPER_MAGIC if path.name == "cgroup" else None


def test_memory_and_swap_come_from_meminfo_and_proc_swaps(tmp_path: Path) -> None:
    """Totals come from meminfo; swap is on because /proc/swaps lists a device."""
    tree = HostTree(tmp_path).standard(total=16 * GIB, swap_total=4 * GIB, swap_free=3 * GIB)
    tree.swaps(("/swapfile", "file", 4 * 1024 * 1024, 1024 * 1024, -2))
    facts = read_memory(tree.paths)
    assert facts.memory_total_bytes == 16 * GIB
    assert (facts.swap_total_bytes, facts.swap_used_bytes) == (4 * GIB, GIB)
    assert facts.swap_on
    assert facts.swap_devices[0].filename == "/swapfile"
    assert facts.swap_devices[0].size_bytes == 4 * GIB


def test_swap_is_off_when_proc_swaps_has_only_its_header(tree: HostTree) -> None:
    """kubelet's rule: a header-only /proc/swaps means swap is off."""
    assert not read_memory(tree.paths).swap_on


def test_proc_swaps_unescapes_spaces_and_skips_junk() -> None:
    """The kernel escapes spaces as \\040; short lines are ignored."""
    devices = parse_proc_swaps("Filename Type Size Used Priority\n/my\\040swap file 8 0 -2\nbad\n")
    assert [d.filename for d in devices] == ["/my swap"]


@pytest.mark.parametrize(
    ("root", "unified", "mode"),
    [
        (CGROUP2_SUPER_MAGIC, None, CgroupMode.V2),
        (TMPFS_MAGIC, CGROUP2_SUPER_MAGIC, CgroupMode.HYBRID),
        (TMPFS_MAGIC, None, CgroupMode.V1),
        (0xEF53, None, CgroupMode.UNKNOWN),
        (None, None, CgroupMode.UNKNOWN),
    ],
)
def test_cgroup_mode_follows_filesystem_magic(
    root: int | None, unified: int | None, mode: CgroupMode
) -> None:
    """v2, hybrid and v1 are told apart by the magic of /sys/fs/cgroup and its unified mount."""
    assert mode_from_magic(root, unified) is mode


def test_v2_swap_controller_is_read_from_our_own_cgroup(tree: HostTree) -> None:
    """With memory.swap.max in our own cgroup, the swap controller is available."""
    facts = read_cgroups(tree.paths, _v2)
    assert facts.mode is CgroupMode.V2
    assert facts.swap_controller
    assert facts.own_cgroup == "/system.slice/kubelet-companion.service"


def test_v2_without_memory_swap_max_has_no_swap_controller(tmp_path: Path) -> None:
    """A kernel without swap accounting has no memory.swap.max anywhere."""
    tree = HostTree(tmp_path).standard()
    for leftover in (tree.root / "sys/fs/cgroup").rglob("memory.swap.max"):
        leftover.unlink()
    assert not read_cgroups(tree.paths, _v2).swap_controller


def test_in_the_root_cgroup_a_child_with_memory_swap_max_counts(tmp_path: Path) -> None:
    """The root cgroup never has memory.swap.max, so a child cgroup is checked instead."""
    tree = HostTree(tmp_path).standard()
    tree.own_cgroup("/")
    assert read_cgroups(tree.paths, _v2).swap_controller


def test_own_cgroup_defaults_to_root_without_a_unified_line(tmp_path: Path) -> None:
    """Only the 0:: line names the unified cgroup."""
    tree = HostTree(tmp_path)
    tree.write("proc/self/cgroup", "4:memory:/x\n")
    assert own_cgroup(tree.paths) == "/"


def test_kernel_facts(tree: HostTree) -> None:
    """Release, numeric version, min_free_kbytes and the boot ID are read."""
    kernel = read_kernel(tree.paths)
    assert kernel.version == (6, 1, 0)
    assert kernel.min_free_kbytes == 67584
    assert kernel.boot_id == "0b6f1c1e-5d5a-4d7e-9d3c-5b1f1c1e5d5a"
    assert not kernel.in_user_namespace


@pytest.mark.parametrize(
    ("release", "version"),
    [
        ("6.4.0", (6, 4, 0)),
        ("5.15.0-91-generic", (5, 15, 0)),
        ("6.18", (6, 18, 0)),
        ("x", (0, 0, 0)),
    ],
)
def test_parse_kernel_version(release: str, version: tuple[int, int, int]) -> None:
    """Distribution suffixes are ignored; garbage is version 0."""
    assert parse_kernel_version(release) == version


def test_user_namespace_detection_follows_uid_map() -> None:
    """Only the full 0 0 4294967295 identity map is the initial namespace."""
    assert not in_user_namespace("         0          0 4294967295\n")
    assert in_user_namespace("         0     100000      65536\n")
    assert not in_user_namespace(None)


def test_facts_bundle_applies_the_noswap_rule(tmp_path: Path) -> None:
    """Inside a user namespace noswap is unsupported whatever the kernel."""
    tree = HostTree(tmp_path).standard()
    tree.kernel(release="6.8.0")
    tree.user_namespace(True)
    facts = collect_node_facts(tree.paths, fs_magic=_v2)
    assert not facts.tmpfs_noswap.supported
    assert facts.tmpfs_noswap.reason == "running in a user namespace"


@pytest.mark.parametrize("hybrid", [True, False], ids=["hybrid", "v1"])
@pytest.mark.parametrize("memsw", [True, False], ids=["memsw", "no-memsw"])
def test_cgroup_v1_never_has_a_swap_controller(tmp_path: Path, hybrid: bool, memsw: bool) -> None:
    """On v1 and hybrid hosts memsw is recorded as memsw, never as the swap controller the
    kubelet's LimitedSwap needs (kubelet's own check would say yes to memsw)."""
    tree = HostTree(tmp_path).standard()
    tree.own_cgroup_v1(hybrid=hybrid)
    cgroups = CgroupV1TreeBuilder(tree.paths.cgroup_root, hybrid=hybrid, memsw=memsw)
    facts = read_cgroups(tree.paths, cgroups.fs_magic)
    assert facts.mode is (CgroupMode.HYBRID if hybrid else CgroupMode.V1)
    assert (facts.swap_controller, facts.limited_swap, facts.memsw_accounting) == (
        False,
        False,
        memsw,
    )
    assert facts.swap_controller_line().endswith(": not usable by the kubelet for LimitedSwap")
