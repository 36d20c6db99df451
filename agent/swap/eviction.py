"""The swap guide's eviction check: does kubelet evict before the kernel gets to swap?

The kernel starts reclaiming (and so swapping) when free memory nears its watermarks,
which scale with ``vm.min_free_kbytes``. If kubelet's ``memory.available`` eviction
threshold sits above that, kubelet evicts pods while the kernel still sees plenty of free
memory, and the swap the node was given goes mostly unused. The threshold that fires
first is the highest of the hard and soft ones; kubelet's default hard one is 100Mi.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.kubesemantics.quantities import quantity_to_bytes
from agent.node.kubeletconfig import KubeletEvictionSettings

MEMORY_AVAILABLE = "memory.available"
DEFAULT_MEMORY_AVAILABLE = "100Mi"


@dataclass(frozen=True)
class MemoryThreshold:
    source: str
    value: str
    bytes: int


@dataclass(frozen=True)
class EvictionCheck:
    warning: str | None
    """Set when the threshold is above ``vm.min_free_kbytes`` while swap is on."""
    detail: str
    threshold: MemoryThreshold | None = None


def threshold_bytes(value: str, memory_capacity: int) -> int | None:
    """Bytes for ``100Mi`` or ``5%`` of capacity; ``None`` for a disabled (zero) threshold."""
    text = value.strip()
    if text.endswith("%"):
        percent = float(text[:-1])
        if not 0 <= percent <= 100:
            raise ValueError(f"percentage {value!r} is outside 0-100%")
        amount = int(float(memory_capacity) * percent / 100)
    else:
        amount = quantity_to_bytes(text)
        if amount < 0:
            raise ValueError(f"threshold {value!r} is negative")
    return amount or None


def memory_thresholds(
    settings: KubeletEvictionSettings, memory_capacity: int
) -> list[MemoryThreshold]:
    """Every ``memory.available`` threshold kubelet runs with, by kubelet's defaulting."""
    hard = settings.eviction_hard
    if hard is None or (MEMORY_AVAILABLE not in hard and settings.merge_defaults):
        candidates = [("kubelet default evictionHard", DEFAULT_MEMORY_AVAILABLE)]
    else:
        candidates = [("evictionHard", hard[MEMORY_AVAILABLE])] if MEMORY_AVAILABLE in hard else []
    if settings.eviction_soft and MEMORY_AVAILABLE in settings.eviction_soft:
        candidates.append(("evictionSoft", settings.eviction_soft[MEMORY_AVAILABLE]))
    found = []
    for source, value in candidates:
        amount = threshold_bytes(value, memory_capacity)
        if amount is not None:
            found.append(MemoryThreshold(source, value, amount))
    return found


def check_eviction_threshold(
    settings: KubeletEvictionSettings,
    *,
    memory_capacity: int,
    min_free_kbytes: int | None,
    swap_on: bool,
) -> EvictionCheck:
    try:
        thresholds = memory_thresholds(settings, memory_capacity)
    except ValueError as error:
        return EvictionCheck(None, f"{settings.path}: bad memory.available threshold: {error}")
    if not thresholds:
        return EvictionCheck(None, "kubelet has no memory.available eviction threshold")
    highest = max(thresholds, key=lambda threshold: threshold.bytes)
    if min_free_kbytes is None:
        return EvictionCheck(None, "vm.min_free_kbytes is unreadable", highest)
    min_free = min_free_kbytes * 1024
    summary = (
        f"memory.available<{highest.value} ({highest.source}, {highest.bytes} bytes) vs "
        f"vm.min_free_kbytes={min_free_kbytes} ({min_free} bytes)"
    )
    if swap_on and highest.bytes > min_free:
        warning = (
            f"kubelet's eviction threshold {summary}: the threshold is higher, so kubelet "
            "evicts pods before the kernel starts swapping and swap goes mostly unused; "
            "raise vm.min_free_kbytes above it or lower the threshold"
        )
        return EvictionCheck(warning, summary, highest)
    return EvictionCheck(None, summary, highest)
