"""Node facts against a real swap file and a real tmpfs noswap mount probe (root only)."""

import json
import os
from pathlib import Path

import pytest

from agent.node.memory import read_memory
from agent.node.paths import HostPaths
from agent.node.tmpfs import probe_noswap_mount
from tests.harness.cli import run_cli
from tests.harness.swapfile import SwapFile

# The host's swap is one for every test process: tests that switch a swap file on, or
# compare what they read with /proc/swaps, run one after another on one xdist worker.
pytestmark = pytest.mark.xdist_group("host-swap")


def test_swap_facts_match_the_real_swap_file(swap_file: SwapFile) -> None:
    """With the swap file on, /proc/swaps and our facts agree on device and size."""
    facts = read_memory(HostPaths())
    assert facts.swap_on
    (device,) = [d for d in facts.swap_devices if d.filename == str(swap_file.path)]
    # mkswap keeps one page for its header.
    assert swap_file.size_bytes - 4096 <= device.size_bytes <= swap_file.size_bytes
    assert facts.swap_total_bytes >= device.size_bytes


def test_doctor_json_reports_the_real_swap_file(swap_file: SwapFile) -> None:
    """doctor --json lists the swap file exactly as /proc/swaps does."""
    result = run_cli("doctor", "--json")
    assert result.returncode == 0, result.stderr
    swap = json.loads(result.stdout)["sections"]["swap"]
    line = next(
        row
        for row in Path("/proc/swaps").read_text().splitlines()
        if row.startswith(str(swap_file.path))
    )
    size_kib = int(line.split()[2])
    assert swap["on"] is True
    assert {"filename": str(swap_file.path), "size_bytes": size_kib * 1024}.items() <= next(
        d for d in swap["devices"] if d["filename"] == str(swap_file.path)
    ).items()


def test_swap_is_off_again_after_the_fixture(tmp_path: Path) -> None:
    """The fixture always switches its file off: no stray /var/tmp swap remains."""
    ours = [line for line in Path("/proc/swaps").read_text().splitlines() if "kc-swap-" in line]
    assert not ours, ours


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting tmpfs needs root")
def test_noswap_probe_mounts_for_real(tmp_path: Path) -> None:
    """The probe mounts tmpfs with noswap, unmounts it, and leaves no directory behind."""
    result = probe_noswap_mount(tmp_path)
    kernel = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    assert result.supported is (kernel >= (6, 4)), result.reason
    assert list(tmp_path.iterdir()) == []
    assert str(tmp_path) not in Path("/proc/mounts").read_text()
