"""The swap facts of this real machine with a real swap file on (root only).

The node-level series and the Node's label/annotation come from the live /proc, so with the
``swap_file`` fixture switched on they must equal what /proc/meminfo says. The tmpfs noswap
probe is compared with a manual ``mount -t tmpfs -o noswap``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent.node.facts import collect_node_facts
from agent.node.memory import read_memory
from agent.node.metrics import NodeFactsCollector
from agent.node.paths import HostPaths
from agent.node.systemslice import swap_disks
from agent.node.tmpfs import probe_noswap_mount
from agent.swap.labels import SWAP_CAPACITY_ANNOTATION, SWAP_LABEL
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.swapfile import SwapFile
from tests.integration.swap.conftest import NODE, RealNode, StartSwapAgent

# The host's swap is one for every test process: tests that switch a swap file on, or
# compare what they read with /proc/swaps, run one after another on one xdist worker.
pytestmark = pytest.mark.xdist_group("host-swap")


def meminfo_swap() -> tuple[int, int]:
    """(SwapTotal, SwapTotal - SwapFree) in bytes, straight from /proc/meminfo."""
    fields = {
        line.split(":")[0]: int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith(("SwapTotal:", "SwapFree:"))
    }
    return fields["SwapTotal"], fields["SwapTotal"] - fields["SwapFree"]


def test_node_swap_series_match_proc_meminfo(swap_file: SwapFile) -> None:
    """machine_swap_bytes and node_swap_usage_bytes are /proc/meminfo's, with the file on."""
    paths = HostPaths()
    registry = CollectorRegistry()
    registry.register(NodeFactsCollector(paths, collect_node_facts(paths)))
    before = meminfo_swap()
    capacity = registry.get_sample_value("machine_swap_bytes")
    usage = registry.get_sample_value("node_swap_usage_bytes")
    after = meminfo_swap()
    assert capacity in (before[0], after[0])
    assert usage in (before[1], after[1])
    assert capacity >= swap_file.size_bytes - 4096  # our file is part of it
    assert registry.get_sample_value("kubelet_companion_swap_enabled") == 1


async def test_node_label_and_capacity_annotation_follow_the_real_swap(
    swap_file: SwapFile, fake_apiserver: FakeApiServer, start_swap_agent: StartSwapAgent
) -> None:
    """On this machine, with the swap file on: label swap=true, annotation = SwapTotal."""
    agent = await start_swap_agent(RealNode())
    await agent.controller.run_once()
    current = fake_apiserver.get("nodes", NODE)
    assert current["metadata"]["labels"][SWAP_LABEL] == "true"
    total = read_memory(HostPaths()).swap_total_bytes
    assert total >= swap_file.size_bytes - 4096
    assert current["metadata"]["annotations"][SWAP_CAPACITY_ANNOTATION] == str(total)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting tmpfs needs root")
def test_noswap_probe_agrees_with_a_manual_mount(tmp_path: Path) -> None:
    """probe_noswap_mount says what `mount -t tmpfs -o noswap` says on this kernel."""
    if shutil.which("mount") is None:
        pytest.skip("mount(8) is not installed (util-linux)")
    target = tmp_path / "manual"
    target.mkdir()
    manual = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "noswap", "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if manual.returncode == 0:
        subprocess.run(["umount", str(target)], check=True)
    probe = probe_noswap_mount(tmp_path)
    assert probe.supported is (manual.returncode == 0), (probe.reason, manual.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manual"]  # the probe cleaned up


def test_swap_backing_disk_is_found_for_the_real_swap_file(swap_file: SwapFile) -> None:
    """io.latency needs the whole disk under the swap file; it is found or the skip explained."""
    paths = HostPaths()
    devices = [d for d in read_memory(paths).swap_devices if d.filename == str(swap_file.path)]
    disks = swap_disks(paths, devices)
    assert len(disks.devices) + len(disks.skipped) == 1
    for device in disks.devices:
        assert (paths.sys / "dev" / "block" / device).exists()
        assert not (paths.sys / "dev" / "block" / device / "partition").exists()
