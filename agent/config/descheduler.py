"""The central descheduler's own config (its policy is a separate, upstream-format file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import Duration, HostPort, setting

DEFAULT_DESCHEDULER_METRICS_BIND_ADDRESS = "127.0.0.1:9478"


@dataclass(frozen=True)
class DeschedulerConfig:
    kubeconfig: str = setting("")
    metrics_bind_address: HostPort = setting(HostPort(DEFAULT_DESCHEDULER_METRICS_BIND_ADDRESS))
    log_level: Literal["debug", "info", "warning", "error"] = setting("info")
    log_format: Literal["auto", "json", "console"] = setting("auto")
    policy_file: str = setting("")
    descheduling_interval: Duration = setting(Duration(0.0))
    dry_run: bool = setting(False)
    leader_elect: bool = setting(False)
    client_connection_qps: float = setting(50.0)
    """kube-scheduler's client default (upstream's descheduler gets client-go's 5 when the
    flag is unset; ``agent.kube.ratelimit`` says why we differ); 0 = no limit."""
    client_connection_burst: int = setting(100, minimum=1)
    eviction_concurrency: int = setting(8, minimum=1, maximum=256)
    """Evictions in flight at once (upstream: 1)."""
    event_driven_cycles: bool = setting(False)
    """Ours: also run a cycle soon after a node becomes Ready, a NodeReport crosses the
    LowNodeUtilization thresholds, or a critical add-on goes Unschedulable."""
    min_cycle_spacing: Duration = setting(Duration(30.0), minimum=0)
    """Event-driven cycles never start sooner than this after the previous cycle."""
    held_eviction_timeout: Duration = setting(Duration(60.0), minimum=0)
    """Ours: how long a cycle waits for a PodDisruptionBudget to allow an eviction it held
    (never past the next interval); 0 reports them blocked at once, as a dry run does."""
    prometheus_url: str = setting("", key="prometheusURL")
    """Ours: replaces the policy's Prometheus URL (``metricsProviders``), e.g. outside the
    cluster."""
    prometheus_token_file: str = setting("")
    """Ours: a file holding the Prometheus bearer token, read before every query."""
    prometheus_ca_file: str = setting("", key="prometheusCAFile")
    """Ours: trust only this CA for Prometheus (default: the system's, plus the
    service-account CA in a pod)."""
    prometheus_insecure_skip_tls_verify: bool = setting(
        False, key="prometheusInsecureSkipTLSVerify"
    )
    prometheus_timeout: Duration = setting(Duration(30.0), minimum=0.001)
    """Ours: each Prometheus attempt's connect timeout, and again its answer's."""
    implicit_rollout_budgets: bool = setting(True)
    """Ours: a workload no PodDisruptionBudget selects loses no more pods at once than its
    rollout's ``maxUnavailable`` (at least one); the rest wait for replacements to be Ready."""

    def validate(self) -> list[FieldError]:
        errors = []
        if self.policy_file and not self.policy_file.startswith("/"):
            errors.append(FieldError("policyFile", "must be an absolute path"))
        if self.leader_elect and self.descheduling_interval <= 0:
            errors.append(
                FieldError("leaderElect", "needs a positive deschedulingInterval (as upstream)")
            )
        if self.min_cycle_spacing < 0:
            errors.append(FieldError("minCycleSpacing", "must not be negative"))
        return errors
