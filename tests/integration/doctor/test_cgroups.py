"""doctor end to end on a cgroup v1 node: it warns that the kubelet cannot apply LimitedSwap
there, says what is still checked, never calls v1's memsw a swap controller the kubelet can
use, and names the kubepods tree the one cgroup finder found; ``--json`` says the same."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.cgroups import MIB, CgroupV1TreeBuilder, container_id
from tests.harness.cli import run_cli
from tests.harness.hosttree import HostTree

pytestmark = pytest.mark.root

UID = "1f0e4a3b-7c2d-4e5f-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def v1_host(tmp_path: Path) -> Iterator[HostTree]:
    """A v1 host tree (cgroupfs driver, one Burstable pod) on a real tmpfs mount, so that
    statfs itself says v1, as on a real host (a plain directory would say ext4 or xfs)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    host = HostTree(tmp_path / "host")
    host.memory()
    host.swaps()
    host.kernel()
    host.user_namespace(False)
    mount = host.paths.cgroup_root
    mount.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "kc-test-cgroup", str(mount)], check=True)
    try:
        host.own_cgroup_v1(hybrid=False)
        tree = CgroupV1TreeBuilder(mount, "cgroupfs", hybrid=False)
        tree.add_container(UID, "burstable", container_id(1), usage_in_bytes=100 * MIB)
        yield host
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def run_doctor(tmp_path: Path, host: HostTree, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "agent.yaml"
    paths = {"proc": str(host.paths.proc), "sys": str(host.paths.sys), "etc": str(host.paths.etc)}
    config.write_text(json.dumps({"nodeName": "n1", "hostPaths": paths}))
    return run_cli("doctor", "--config", str(config), *args)


def test_doctor_on_cgroup_v1_warns_and_reports_no_usable_swap_controller(
    v1_host: HostTree, tmp_path: Path
) -> None:
    """Swap off, default config (the field report's node): doctor still warns that LimitedSwap
    needs cgroup v2 and what is still checked; the swap controller line says memsw is not
    usable by the kubelet for LimitedSwap; the kubepods tree is the v1 memory hierarchy's."""
    result = run_doctor(tmp_path, v1_host, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    cgroups = report["sections"]["cgroups"]
    assert cgroups["mode"] == "v1"
    assert cgroups["limited_swap"] is False
    assert "not usable by the kubelet for LimitedSwap" in cgroups["swap_controller"]
    assert cgroups["kubepods"] == "memory/kubepods (cgroupfs, cgroup v1)"
    (warning,) = [w for w in report["warnings"] if "LimitedSwap needs cgroup v2" in w]
    for still_checked in ("swap", "per-pod", "shutdown"):
        assert still_checked in warning.split("still checked")[1]

    table = run_doctor(tmp_path, v1_host)
    assert table.returncode == 0, table.stderr
    assert re.search(r"swap_controller +.*not usable by the kubelet for LimitedSwap", table.stdout)
    assert "LimitedSwap needs cgroup v2" in table.stdout.split("[warnings]")[1]
