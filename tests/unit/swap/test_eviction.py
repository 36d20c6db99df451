"""The eviction-threshold check: warn when kubelet would evict before the kernel swaps."""

from pathlib import Path

import pytest

from agent.node.kubeletconfig import (
    KubeletConfigError,
    KubeletEvictionSettings,
    parse_kubelet_eviction,
    read_kubelet_eviction,
)
from agent.swap.eviction import check_eviction_threshold, memory_thresholds, threshold_bytes

GIB = 2**30
MIB = 2**20


def settings(text: str) -> KubeletEvictionSettings:
    return parse_kubelet_eviction(text, Path("/var/lib/kubelet/config.yaml"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [("100Mi", 100 * MIB), ("1Gi", GIB), ("5%", int(16 * GIB * 0.05)), ("0%", None), ("0", None)],
)
def test_threshold_values(value: str, expected: int | None) -> None:
    """Quantities are bytes, percentages are of memory capacity, zero disables."""
    assert threshold_bytes(value, 16 * GIB) == expected


def test_bad_percentage_is_rejected() -> None:
    """A percentage above 100 is not a threshold."""
    with pytest.raises(ValueError, match="outside"):
        threshold_bytes("150%", GIB)


def test_kubelet_default_applies_when_eviction_hard_is_unset() -> None:
    """No evictionHard in the file: kubelet's default memory.available<100Mi."""
    (threshold,) = memory_thresholds(settings("kind: KubeletConfiguration\n"), 16 * GIB)
    assert (threshold.source, threshold.bytes) == ("kubelet default evictionHard", 100 * MIB)


def test_partial_eviction_hard_drops_the_memory_default_unless_merged() -> None:
    """A partial evictionHard replaces the defaults, unless mergeDefaultEvictionSettings."""
    partial = "evictionHard:\n  nodefs.available: 10%\n"
    assert memory_thresholds(settings(partial), 16 * GIB) == []
    merged = settings(partial + "mergeDefaultEvictionSettings: true\n")
    assert [t.bytes for t in memory_thresholds(merged, 16 * GIB)] == [100 * MIB]


def test_highest_of_hard_and_soft_is_checked() -> None:
    """The soft threshold fires first when it is higher, so it is the one compared."""
    text = "evictionHard:\n  memory.available: 100Mi\nevictionSoft:\n  memory.available: 1Gi\n"
    check = check_eviction_threshold(
        settings(text), memory_capacity=16 * GIB, min_free_kbytes=512 * 1024, swap_on=True
    )
    assert check.threshold is not None
    assert check.threshold.source == "evictionSoft"
    assert check.warning is not None
    assert "evictionSoft" in check.warning


@pytest.mark.parametrize(
    ("threshold", "min_free_kbytes", "swap_on", "warns"),
    [
        ("100Mi", 67584, True, True),
        ("100Mi", 500000, True, False),
        ("100Mi", 102400, True, False),
        ("100Mi", 67584, False, False),
    ],
)
def test_warning_only_when_threshold_is_above_min_free_with_swap_on(
    threshold: str, min_free_kbytes: int, swap_on: bool, warns: bool
) -> None:
    """The guide's rule: threshold above vm.min_free_kbytes while swap is on."""
    text = f"evictionHard:\n  memory.available: {threshold}\n"
    check = check_eviction_threshold(
        settings(text), memory_capacity=16 * GIB, min_free_kbytes=min_free_kbytes, swap_on=swap_on
    )
    assert (check.warning is not None) is warns


def test_unreadable_min_free_or_bad_threshold_never_warns() -> None:
    """Missing facts give a detail line, not a false warning."""
    ok = settings("evictionHard:\n  memory.available: 100Mi\n")
    assert (
        check_eviction_threshold(
            ok, memory_capacity=GIB, min_free_kbytes=None, swap_on=True
        ).warning
        is None
    )
    bad = settings("evictionHard:\n  memory.available: lots\n")
    check = check_eviction_threshold(bad, memory_capacity=GIB, min_free_kbytes=1, swap_on=True)
    assert check.warning is None
    assert "bad memory.available" in check.detail


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("kind: Pod\n", "expected KubeletConfiguration"),
        ("- a\n", "not a mapping"),
        ("evictionHard: [1]\n", "evictionHard must map"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_bad_kubelet_config_is_a_clear_error(text: str, problem: str) -> None:
    """A file that is not a KubeletConfiguration is reported with its path and reason."""
    with pytest.raises(KubeletConfigError, match=problem):
        settings(text)


def test_missing_kubelet_config_names_the_file(tmp_path: Path) -> None:
    """An unreadable path says which file and why."""
    with pytest.raises(KubeletConfigError, match=r"cannot read .*missing\.yaml"):
        read_kubelet_eviction(tmp_path / "missing.yaml")
