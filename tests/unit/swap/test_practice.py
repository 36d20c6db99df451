"""The swap guide's node practice on its own: what it skips, and the eviction warning's state.

The controller hands it each full audit's node summary and memory sample
(``tests/integration/swap`` drives it through the controller on a fixture node); here it
runs alone, with doubles for the system.slice and the kubelet config.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from agent.config.swap import MemorySwapConfig
from agent.node.kubeletconfig import KubeletConfigError, KubeletEvictionSettings
from agent.node.memory import MemoryFacts
from agent.node.paths import HostPaths
from agent.swap.practice import SwapPractice
from tests.harness.cgroups import GIB
from tests.unit.swap.node_summary import V2_LIMITED_SWAP_NODE

MEMORY = MemoryFacts(16 * GIB, 8 * GIB, 4 * GIB, 4 * GIB, 0, 0, ())


class _Slice:
    """A system.slice that records what it was asked to change."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def ensure_no_swap(self) -> None:
        self.calls.append("no-swap")

    def ensure_io_latency(self, device: str, target: int) -> None:
        self.calls.append(f"io.latency {device} {target}")


def _practice(
    tmp_path: Path, config: dict[str, Any], kubelet: KubeletEvictionSettings | None = None
) -> tuple[SwapPractice, _Slice, list[tuple[str, str]]]:
    said: list[tuple[str, str]] = []
    system_slice = _Slice()

    def read_kubelet_config() -> KubeletEvictionSettings:
        if kubelet is None:
            raise KubeletConfigError("no kubelet config here")
        return kubelet

    min_free = tmp_path / "proc" / "sys" / "vm" / "min_free_kbytes"
    min_free.parent.mkdir(parents=True)
    min_free.write_text("67584\n")
    practice = SwapPractice(
        config=MemorySwapConfig(**config),  # type: ignore[arg-type]
        paths=HostPaths(proc=tmp_path / "proc"),
        warn_once=lambda key, message, **_fields: said.append((key, message)),
        system_slice=system_slice,  # type: ignore[arg-type]  # a recording double
        read_kubelet_config=read_kubelet_config,
    )
    return practice, system_slice, said


async def test_system_slice_settings_are_skipped_without_cgroup_v2(tmp_path: Path) -> None:
    """On cgroup v1 nothing is written to system.slice; the warning says why."""
    practice, system_slice, said = _practice(
        tmp_path, {"system_slice_no_swap": True, "system_slice_io_latency": 0.05}
    )
    v1 = dataclasses.replace(
        V2_LIMITED_SWAP_NODE,
        node=dataclasses.replace(V2_LIMITED_SWAP_NODE.node, cgroup_v2=False),
        cgroup_mode="v1",
    )
    await practice.apply(v1, MEMORY)
    assert system_slice.calls == []
    assert said == [("slice-v1", "system.slice settings need cgroup v2; skipped")]


async def test_only_the_opted_in_settings_are_applied(tmp_path: Path) -> None:
    """memory.swap.max=0 alone when only systemSliceNoSwap is set; no eviction check."""
    practice, system_slice, said = _practice(tmp_path, {"system_slice_no_swap": True})
    await practice.apply(V2_LIMITED_SWAP_NODE, MEMORY)
    assert system_slice.calls == ["no-swap"]
    assert said == []
    assert practice.eviction_warning is False


async def test_an_unreadable_kubelet_config_skips_the_check_and_keeps_its_state(
    tmp_path: Path,
) -> None:
    """A kubelet config that cannot be read is said once; the warning state is not touched."""
    practice, _slice, said = _practice(tmp_path, {"check_eviction_threshold": True})
    practice.eviction_warning = True
    await practice.apply(V2_LIMITED_SWAP_NODE, MEMORY)
    assert said == [("kubeletconfig:no kubelet config here", "eviction check skipped")]
    assert practice.eviction_warning is True


async def test_the_eviction_warning_follows_the_threshold(tmp_path: Path) -> None:
    """kubelet's 100Mi hard threshold is above vm.min_free_kbytes (66 MiB): warned; once it
    is 10Mi, below it, the warning clears."""
    above = KubeletEvictionSettings("k.yaml", {"memory.available": "100Mi"}, None, False)
    practice, _slice, said = _practice(tmp_path, {"check_eviction_threshold": True}, above)
    await practice.apply(V2_LIMITED_SWAP_NODE, MEMORY)
    assert practice.eviction_warning is True
    assert [key for key, _message in said if key.startswith("eviction:")]
    practice.read_kubelet_config = lambda: KubeletEvictionSettings(
        "k.yaml", {"memory.available": "10Mi"}, None, False
    )
    await practice.apply(V2_LIMITED_SWAP_NODE, MEMORY)
    assert practice.eviction_warning is False
