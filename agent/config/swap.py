"""``memorySwap``: kubelet's section, extended with our audit and enforcement knobs.

``swapBehavior`` keeps kubelet's name and values; set it to what the node's kubelet uses,
so the limits we compute are the ones kubelet asked the runtime for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import ByteQuantity, Duration, setting


@dataclass(frozen=True)
class MemorySwapConfig:
    swap_behavior: Literal["NoSwap", "LimitedSwap"] = setting("NoSwap")
    reserved_swap: ByteQuantity = setting(ByteQuantity(0), minimum=0)
    enforce: bool = setting(False)
    audit_interval: Duration = setting(Duration(30.0), minimum=1)
    pod_drift_events: bool = setting(False)
    taint_swap_nodes: bool = setting(False)
    system_slice_no_swap: bool = setting(False)
    system_slice_io_latency: Duration = setting(Duration(0.0))
    check_eviction_threshold: bool = setting(False)
    kubelet_config_path: str = setting("/var/lib/kubelet/config.yaml")

    def validate(self) -> list[FieldError]:
        errors = []
        if not self.kubelet_config_path.startswith("/"):
            errors.append(FieldError("kubeletConfigPath", "must be an absolute path"))
        if 0 < self.system_slice_io_latency < 0.001:
            errors.append(FieldError("systemSliceIoLatency", "must be 0 (off) or >= 1ms"))
        return errors
