"""``memorySwap``: kubelet's section, extended with our audit and enforcement knobs.

``swapBehavior`` keeps kubelet's name and values; set it to what the node's kubelet uses,
so the limits we compute are the ones kubelet asked the runtime for. ``cgroupDriver`` and
``cgroupRoot`` likewise mirror the kubelet fields that decide where the kubepods tree is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import ByteQuantity, Duration, setting

_DEVICE = re.compile(r"^\d{1,10}:\d{1,10}$")

SwapBehavior = Literal["NoSwap", "LimitedSwap"]
"""kubelet's ``memorySwap.swapBehavior`` values (``UnlimitedSwap`` was removed in v1.30)."""
NO_SWAP: SwapBehavior = "NoSwap"
LIMITED_SWAP: SwapBehavior = "LimitedSwap"
DEFAULT_SWAP_BEHAVIOR: SwapBehavior = NO_SWAP
"""kubelet's own default since v1.30: an unset ``swapBehavior`` means ``NoSwap``. (Before,
in v1.28 and v1.29 with the NodeSwap feature gate on, it meant ``UnlimitedSwap``, which we
do not model: set ``swapBehavior`` to what the node's kubelet uses.) The one definition:
``docs/swap.md`` is checked against it."""


@dataclass(frozen=True)
class MemorySwapConfig:
    swap_behavior: SwapBehavior = setting(DEFAULT_SWAP_BEHAVIOR)
    reserved_swap: ByteQuantity = setting(ByteQuantity(0), minimum=0)
    """Swap kept back from pods (KEP 2400's system-reserved swap). 0 reproduces kubelet."""
    cgroup_driver: Literal["auto", "systemd", "cgroupfs"] = setting("auto")
    cgroup_root: str = setting("/")
    enforce: bool = setting(False)
    audit_interval: Duration = setting(Duration(30.0), minimum=1)
    pod_drift_events: bool = setting(False)
    pod_drift_event_interval: Duration = setting(Duration(900.0), minimum=1)
    taint_swap_nodes: bool = setting(False)
    system_slice_no_swap: bool = setting(False)
    system_slice_io_latency: Duration = setting(Duration(0.0))
    system_slice_io_latency_devices: tuple[str, ...] = setting(factory=tuple)
    """``MAJ:MIN`` of the disks to protect; empty means the disks that back active swap."""
    check_eviction_threshold: bool = setting(False)
    kubelet_config_path: str = setting("/var/lib/kubelet/config.yaml")

    def validate(self) -> list[FieldError]:
        errors = []
        if not self.kubelet_config_path.startswith("/"):
            errors.append(FieldError("kubeletConfigPath", "must be an absolute path"))
        if 0 < self.system_slice_io_latency < 0.001:
            errors.append(FieldError("systemSliceIoLatency", "must be 0 (off) or >= 1ms"))
        if not self.cgroup_root.startswith("/"):
            errors.append(FieldError("cgroupRoot", "must be an absolute cgroup path like /"))
        elif any(part in (".", "..") for part in self.cgroup_root.split("/")):
            errors.append(FieldError("cgroupRoot", "must not contain . or .. components"))
        errors.extend(
            FieldError(f"systemSliceIoLatencyDevices[{index}]", "must be MAJ:MIN, e.g. 8:0")
            for index, device in enumerate(self.system_slice_io_latency_devices)
            if not _DEVICE.match(device)
        )
        return errors
