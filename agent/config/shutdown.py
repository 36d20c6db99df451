"""Graceful-shutdown settings, spelled and validated as kubelet spells and validates them.

kubelet keeps ``shutdownGracePeriod``, ``shutdownGracePeriodCriticalPods`` and
``shutdownGracePeriodByPodPriority`` at the top level of its KubeletConfiguration, and so do
we, so operators can paste them. Our own knobs live in the ``shutdown`` section.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import Duration, setting
from agent.kubesemantics.wellknown import SYSTEM_CRITICAL_PRIORITY

DEFAULT_SHUTDOWN_GRACE_PERIOD = 30.0
DEFAULT_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS = 10.0
"""kubelet's documented example, our default when none of the three fields is set.

kubelet defaults to 0 (off): there shutdown is one feature of many. Shutdown is this agent's
first job, so a config without any shutdown field gets it on; ``shutdownGracePeriod: 0s``
is the explicit way to turn it off.
"""


def effective_grace_periods(
    total: float | None, critical: float | None, by_priority: tuple[PriorityBucket, ...]
) -> tuple[float, float]:
    """``shutdownGracePeriod`` and ``...CriticalPods`` in force: ours if none is set, else 0."""
    if total is None and critical is None and not by_priority:
        return DEFAULT_SHUTDOWN_GRACE_PERIOD, DEFAULT_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS
    return total or 0.0, critical or 0.0


@dataclass(frozen=True)
class PriorityBucket:
    """One entry of ``shutdownGracePeriodByPodPriority``."""

    priority: int = setting(0)
    shutdown_grace_period_seconds: int = setting(0, minimum=0)


@dataclass(frozen=True)
class PhaseWindow:
    """One bucket on the shutdown's clock, in running order."""

    priority: int
    budget_seconds: int
    deadline_offset_seconds: int
    """Seconds from the shutdown's start by which this phase must be over: its own seconds
    and those of every phase before it."""


def phase_windows(buckets: Iterable[PriorityBucket]) -> tuple[PhaseWindow, ...]:
    """The buckets in running order (ascending priority) with their deadline offsets: the
    one place the phases' seconds are added up."""
    ordered = sorted(buckets, key=lambda bucket: bucket.priority)
    seconds = [bucket.shutdown_grace_period_seconds for bucket in ordered]
    return tuple(
        PhaseWindow(bucket.priority, own, offset)
        for bucket, own, offset in zip(ordered, seconds, accumulate(seconds), strict=True)
    )


def budget_seconds(buckets: Iterable[PriorityBucket]) -> int:
    """The total budget: kubelet asks logind for the *sum* of every bucket's seconds (the last
    phase's deadline offset). Whole seconds; 0 turns graceful shutdown off."""
    windows = phase_windows(buckets)
    return windows[-1].deadline_offset_seconds if windows else 0


def _period_reason(seconds: float) -> str | None:
    if 0 < seconds < 1:
        return "must be either zero or otherwise >= 1s"
    return None


@dataclass(frozen=True)
class ShutdownOptions:
    """What kubelet has no field for: how we terminate, where the drop-in goes, timeouts."""

    mode: Literal["delete", "evict"] = setting("delete")
    include_daemon_set_pods: bool = setting(False, key="includeDaemonSetPods")
    logind_drop_in_path: str = setting(
        "/etc/systemd/logind.conf.d/99-zz-kubelet-companion.conf", key="logindDropInPath"
    )
    manage_logind_delay: bool = setting(True)
    inhibit_delay_margin: Duration = setting(Duration(5.0))
    dbus_call_timeout: Duration = setting(Duration(5.0), key="dbusCallTimeout", minimum=0.1)
    state_file: str = setting("")

    def validate(self) -> list[FieldError]:
        errors = []
        if not self.logind_drop_in_path.startswith("/") or not self.logind_drop_in_path.endswith(
            ".conf"
        ):
            errors.append(
                FieldError("logindDropInPath", "must be an absolute path ending in .conf")
            )
        if self.state_file and not self.state_file.startswith("/"):
            errors.append(FieldError("stateFile", "must be an absolute path"))
        return errors


def validate_grace_periods(
    total: float, critical: float, by_priority: tuple[PriorityBucket, ...]
) -> list[FieldError]:
    """kubelet's rules for the three top-level shutdown fields, as errors with paths."""
    errors = []
    if reason := _period_reason(total):
        errors.append(FieldError("shutdownGracePeriod", reason))
    if reason := _period_reason(critical):
        errors.append(FieldError("shutdownGracePeriodCriticalPods", reason))
    if critical > total:
        errors.append(
            FieldError("shutdownGracePeriodCriticalPods", "must be <= shutdownGracePeriod")
        )
    if by_priority and (total > 0 or critical > 0):
        errors.append(
            FieldError(
                "shutdownGracePeriodByPodPriority",
                "cannot be set together with shutdownGracePeriod or "
                "shutdownGracePeriodCriticalPods",
            )
        )
    seen: dict[int, int] = {}
    for index, bucket in enumerate(by_priority):
        if bucket.priority in seen:
            errors.append(
                FieldError(
                    f"shutdownGracePeriodByPodPriority[{index}].priority",
                    f"duplicate priority {bucket.priority} (also at index {seen[bucket.priority]})",
                )
            )
        seen.setdefault(bucket.priority, index)
    return errors


def priority_buckets(
    total: float, critical: float, by_priority: tuple[PriorityBucket, ...]
) -> tuple[PriorityBucket, ...]:
    """The effective buckets, ascending by priority, as kubelet derives them.

    The legacy pair becomes two buckets: priority 0 gets ``total - critical`` and priority
    2000000000 gets ``critical``. An all-zero config yields no buckets (feature off).

    The durations become whole seconds here, the fraction dropped as kubelet drops it: from
    the buckets on, every budget of a shutdown is whole seconds (``int``), and only logind's
    delay (budget plus ``inhibitDelayMargin``) is rounded again, up, in its drop-in.
    """
    if by_priority:
        return tuple(sorted(by_priority, key=lambda bucket: bucket.priority))
    if total <= 0:
        return ()
    return (
        PriorityBucket(priority=0, shutdown_grace_period_seconds=int(total - critical)),
        PriorityBucket(
            priority=SYSTEM_CRITICAL_PRIORITY, shutdown_grace_period_seconds=int(critical)
        ),
    )
