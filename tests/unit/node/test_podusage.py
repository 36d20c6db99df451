"""Per-pod usage from fixture cgroup trees of both drivers, cgroup v2 and v1."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.node.cgroupstats import stat_field
from agent.node.nodeusage import NodeCounters
from agent.node.podusage import PodScan, PodUsageReader
from agent.report.document import pod_entries
from agent.report.usage import Sample, UsageTracker
from tests.harness.cgroups import GIB, MIB, CgroupTreeBuilder, CgroupV1TreeBuilder, pod_object

WEB = "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b"
DB = "2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
STRAY = "3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
NODE = NodeCounters(
    cpus=4,
    cpu_busy_ticks=0,
    cpu_total_ticks=0,
    memory_total=16 * GIB,
    memory_available=8 * GIB,
    swap_total=0,
    swap_free=0,
)
DRIVERS = [pytest.param("systemd", id="systemd"), pytest.param("cgroupfs", id="cgroupfs")]


def _write_v2(tree: CgroupTreeBuilder, cpu_seconds: float) -> None:
    tree.pod_usage(
        WEB,
        "burstable",
        usage_usec=int(cpu_seconds * 1e6),
        memory_current=300 * MIB,
        inactive_file=100 * MIB,
        swap_current=5 * MIB,
    )
    tree.pod_usage(
        DB, "guaranteed", usage_usec=int(cpu_seconds * 2e6), memory_current=GIB, inactive_file=0
    )
    tree.pod_usage(STRAY, "besteffort", usage_usec=0, memory_current=MIB, inactive_file=0)


def _write_v1(tree: CgroupV1TreeBuilder, cpu_seconds: float) -> None:
    tree.pod_usage(
        WEB,
        "burstable",
        usage_ns=int(cpu_seconds * 1e9),
        usage_in_bytes=300 * MIB,
        total_inactive_file=100 * MIB,
        memsw_usage=305 * MIB,
    )
    tree.pod_usage(
        DB, "guaranteed", usage_ns=int(cpu_seconds * 2e9), usage_in_bytes=GIB, total_inactive_file=0
    )
    tree.pod_usage(STRAY, "besteffort", usage_ns=0, usage_in_bytes=MIB, total_inactive_file=0)


def _two_samples(tmp_path: Path, driver: str, version: int) -> tuple[PodScan, UsageTracker]:
    """Sample at t=100 with 10 s of CPU used, then at t=102 with 11 s (0.5 cores for WEB)."""
    if version == 2:
        v2 = CgroupTreeBuilder(tmp_path, driver)  # type: ignore[arg-type]
        write = lambda seconds: _write_v2(v2, seconds)  # noqa: E731 - two-line table of writers
    else:
        v1 = CgroupV1TreeBuilder(tmp_path, driver)  # type: ignore[arg-type]
        write = lambda seconds: _write_v1(v1, seconds)  # noqa: E731
    reader = PodUsageReader(tmp_path)
    tracker = UsageTracker(weight=1.0)
    write(10.0)
    first = reader.read()
    tracker.add(Sample(100.0, NODE, first))
    write(11.0)
    tracker.add(Sample(102.0, NODE, reader.read()))
    return first, tracker


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("version", [pytest.param(2, id="v2"), pytest.param(1, id="v1")])
def test_pod_counters_and_cpu_rate_from_two_samples(
    tmp_path: Path, driver: str, version: int
) -> None:
    """Each pod cgroup gives its CPU counter, working set (usage minus inactive file) and swap;
    two samples give CPU cores."""
    first, tracker = _two_samples(tmp_path, driver, version)
    assert first.cgroup_version == version
    assert first.driver is not None
    assert first.driver.value == driver
    web = first.pods[WEB]
    assert web.cpu_usec == 10_000_000
    assert web.memory_working_set == 200 * MIB
    assert web.swap_bytes == 5 * MIB
    assert first.pods[DB].memory_working_set == GIB
    assert tracker.pods_smoothed[WEB].cpu_cores == pytest.approx(0.5)
    assert tracker.pods_smoothed[DB].cpu_cores == pytest.approx(1.0)


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("version", [pytest.param(2, id="v2"), pytest.param(1, id="v1")])
def test_cgroups_no_pod_claims_are_left_out(tmp_path: Path, driver: str, version: int) -> None:
    """The report lists the node's pods by their cgroups; a cgroup no pod claims is left out."""
    _, tracker = _two_samples(tmp_path, driver, version)
    assert STRAY in tracker.pods_smoothed  # measured ...
    pods = [pod_object("web-0", WEB), pod_object("db-0", DB, namespace="data")]
    entries = pod_entries(tracker.pods_smoothed, pods)
    assert [(e["namespace"], e["name"], e["uid"]) for e in entries] == [
        ("data", "db-0", DB),
        ("default", "web-0", WEB),
    ]  # ... but claimed by no pod, so not reported
    assert entries[1] == {
        "namespace": "default",
        "name": "web-0",
        "uid": WEB,
        "cpu": 0.5,
        "memory": 200 * MIB,
        "swap": 5 * MIB,
    }


def test_static_pod_matched_through_its_mirror_annotation(tmp_path: Path) -> None:
    """A static pod's cgroup carries its manifest's UID, which the mirror pod names."""
    _, tracker = _two_samples(tmp_path, "systemd", 2)
    mirror = pod_object(
        "etcd-node-1",
        "9f9f9f9f-0000-4000-8000-000000000000",
        namespace="kube-system",
        annotations={"kubernetes.io/config.mirror": DB},
    )
    (entry,) = pod_entries(tracker.pods_smoothed, [mirror])
    assert entry["name"] == "etcd-node-1"
    assert entry["cpu"] == 1.0


def test_no_kubepods_tree_reads_nothing(tmp_path: Path) -> None:
    """A node without a kubepods tree yields no pods rather than an error."""
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    scan = PodUsageReader(tmp_path).read()
    assert scan.pods == {}
    assert scan.cgroup_version is None


MEMORY_STAT = "anon 10\nfile 20\ntotal_inactive_file 3\ninactive_file 7\nactive_file 9"


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        pytest.param(MEMORY_STAT, "anon", 10, id="first-line"),
        pytest.param(MEMORY_STAT, "inactive_file", 7, id="not-a-longer-name-ending-in-it"),
        pytest.param(MEMORY_STAT, "total_inactive_file", 3, id="middle-line"),
        pytest.param(MEMORY_STAT, "active_file", 9, id="last-line-without-newline"),
        pytest.param(MEMORY_STAT + "\n", "active_file", 9, id="last-line"),
        pytest.param(MEMORY_STAT, "file_dirty", None, id="missing"),
        pytest.param("usage_usec x\n", "usage_usec", None, id="not-a-number"),
        pytest.param("usage_usec 5\nusage_usec 6\n", "usage_usec", 5, id="first-of-two"),
        pytest.param("", "anon", None, id="empty"),
        pytest.param(None, "anon", None, id="unreadable"),
    ],
)
def test_stat_field_reads_one_key_value_line(text: str | None, key: str, value: int | None) -> None:
    """A ``cpu.stat``/``memory.stat`` field is the number on the line named exactly ``key``."""
    assert stat_field(text, key) == value
