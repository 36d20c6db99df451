"""The node agent's config document: one YAML file, loaded into frozen dataclasses."""

from __future__ import annotations

import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from agent.config.errors import FieldError
from agent.config.readiness import ReadinessConfig
from agent.config.report import ReportConfig
from agent.config.schema import Duration, HostPort, setting
from agent.config.shutdown import (
    PriorityBucket,
    ShutdownOptions,
    effective_grace_periods,
    priority_buckets,
    validate_grace_periods,
)
from agent.config.swap import MemorySwapConfig
from agent.kubesemantics.names import dns_subdomain_problem

DEFAULT_METRICS_BIND_ADDRESS = "127.0.0.1:9477"


@dataclass(frozen=True)
class HostPathsConfig:
    """Where the host's ``/proc``, ``/sys``, ``/etc`` and ``/run`` are seen from the agent.

    A DaemonSet mounts them under ``/host``; a systemd unit uses them as they are.
    """

    proc: str = setting("/proc")
    sys: str = setting("/sys")
    etc: str = setting("/etc")
    run: str = setting("/run")

    def validate(self) -> list[FieldError]:
        return [
            FieldError(name, "must be an absolute path")
            for name in ("proc", "sys", "etc", "run")
            if not getattr(self, name).startswith("/")
        ]


@dataclass(frozen=True)
class KubeConfig:
    """How we talk to the API server."""

    request_timeout: Duration = setting(Duration(10.0), minimum=0.1)
    watch_timeout: Duration = setting(Duration(300.0), minimum=1)
    """Each watch asks the server to end it after 1 to 2 times this (spread, as client-go)."""
    watch_read_timeout: Duration = setting(Duration(90.0), minimum=1)
    """How much longer than that a watch may stay silent before the client gives up on it;
    a dead connection is found sooner, by TCP keepalive."""


@dataclass(frozen=True)
class AgentConfig:
    """The whole ``kubelet-companion agent`` config file."""

    node_name: str = setting("")
    kubeconfig: str = setting("")
    metrics_bind_address: HostPort = setting(HostPort(DEFAULT_METRICS_BIND_ADDRESS))
    # A connection must send its request within this time; at most this many are open.
    metrics_read_timeout: Duration = setting(Duration(5.0), minimum=0.1)
    metrics_max_connections: int = setting(64, minimum=1)
    log_level: Literal["debug", "info", "warning", "error"] = setting("info")
    log_format: Literal["auto", "json", "console"] = setting("auto")
    state_dir: str = setting("/var/lib/kubelet-companion")
    host_paths: HostPathsConfig = setting(factory=HostPathsConfig)
    kube: KubeConfig = setting(factory=KubeConfig)
    # None: not set. With none of the three shutdown fields set, kubelet's documented example
    # (30s, 10s) applies; see ``effective_grace_periods``.
    shutdown_grace_period: Duration | None = setting(None)
    shutdown_grace_period_critical_pods: Duration | None = setting(None)
    shutdown_grace_period_by_pod_priority: tuple[PriorityBucket, ...] = setting(factory=tuple)
    shutdown: ShutdownOptions = setting(factory=ShutdownOptions)
    memory_swap: MemorySwapConfig = setting(factory=MemorySwapConfig)
    readiness: ReadinessConfig = setting(factory=ReadinessConfig)
    report: ReportConfig = setting(factory=ReportConfig)

    def validate(self) -> list[FieldError]:
        errors = validate_grace_periods(
            *self.grace_periods, self.shutdown_grace_period_by_pod_priority
        )
        if self.node_name and dns_subdomain_problem(self.node_name):
            errors.append(FieldError("nodeName", "must be a lowercase DNS subdomain"))
        if not self.state_dir.startswith("/"):
            errors.append(FieldError("stateDir", "must be an absolute path"))
        return errors

    @property
    def resolved_node_name(self) -> str:
        """``nodeName`` (or ``NODE_NAME``), else this host's name, as kubelet defaults it."""
        return self.node_name or socket.gethostname().lower()

    @property
    def grace_periods(self) -> tuple[float, float]:
        """``shutdownGracePeriod`` and ``shutdownGracePeriodCriticalPods`` in force, seconds."""
        return effective_grace_periods(
            self.shutdown_grace_period,
            self.shutdown_grace_period_critical_pods,
            self.shutdown_grace_period_by_pod_priority,
        )

    @property
    def report_state_file(self) -> Path:
        return Path(self.report.state_file or f"{self.state_dir}/report-state.json")

    @property
    def shutdown_buckets(self) -> tuple[PriorityBucket, ...]:
        """The effective priority buckets, ascending; empty when shutdown handling is off."""
        return priority_buckets(*self.grace_periods, self.shutdown_grace_period_by_pod_priority)

    @property
    def shutdown_state_file(self) -> Path:
        return Path(self.shutdown.state_file or f"{self.state_dir}/shutdown-state.json")

    def with_overrides(self, *, node_name: str | None, kubeconfig: str | None) -> AgentConfig:
        """Apply environment overrides (``NODE_NAME``, ``KUBECONFIG``) over the file."""
        return replace(
            self,
            node_name=node_name or self.node_name,
            kubeconfig=kubeconfig or self.kubeconfig,
        )
