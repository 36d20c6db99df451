"""How the process runs: upstream's flags and our config file, resolved (flags win)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agent.descheduler.cache.state import Decoding
from agent.descheduler.live.evictor import DEFAULT_CONCURRENCY
from agent.descheduler.live.triggers import DEFAULT_MIN_SPACING
from agent.kube.leaderelection import ElectionTiming
from agent.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS
from agent.prometheus.client import DEFAULT_TIMEOUT

LEASE_NAMESPACE = "kube-system"
LEASE_NAME = "descheduler"
DEFAULT_HELD_EVICTION_TIMEOUT = 60.0
"""How long a cycle waits, at most, for budgets to let its held evictions go."""


@dataclass(frozen=True)
class PrometheusOptions:
    """How to reach the policy's Prometheus (``--prometheus-*``; ours, upstream has none)."""

    url: str = ""
    """Replaces the policy's ``metricsProviders`` URL when set (outside the cluster)."""
    token_file: str = ""
    """Read before every query; "" for none (in a pod, the service-account token is
    chosen by the command when the policy names no Secret, as upstream does)."""
    ca_file: str = ""
    insecure_skip_tls_verify: bool = False
    timeout: float = DEFAULT_TIMEOUT
    """Seconds for each attempt's connect, and again for its answer."""


@dataclass(frozen=True)
class RunOptions:
    """Flags and our config file, resolved (flags win)."""

    interval: float = 0.0
    dry_run: bool = False
    output: Literal["table", "json"] = "table"
    leader_elect: bool = False
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    concurrency: int = DEFAULT_CONCURRENCY
    metrics_bind_address: str = "127.0.0.1:9478"
    sync_timeout: float = 600.0
    """A cache that has not listed by then fails the run (exit 1)."""
    decoding: Decoding = "msgspec"
    election: ElectionTiming = field(default_factory=ElectionTiming)
    lease_namespace: str = LEASE_NAMESPACE
    lease_name: str = LEASE_NAME
    identity: str | None = None
    """This replica's name on the Lease; by default the host name plus a random suffix."""
    event_driven: bool = False
    """Also start a cycle soon after a trigger (``triggers``), spaced ``min_cycle_spacing``."""
    min_cycle_spacing: float = DEFAULT_MIN_SPACING
    prometheus: PrometheusOptions = field(default_factory=PrometheusOptions)
    metrics_sync_timeout: float = 60.0
    """How long the first cycle waits for metrics.k8s.io's first sample (upstream: 1 min)."""
    held_eviction_timeout: float = DEFAULT_HELD_EVICTION_TIMEOUT
    """How long a cycle holds an eviction a budget refuses, waiting for the budget to allow
    it (never past the next interval)."""
    implicit_budgets: bool = True
    """Implicit budgets for workloads without a PDB (``core.rules.rollouts``); off, the
    workload caches are not kept either."""

    @property
    def hold_seconds(self) -> float:
        """The cycle's hold: the timeout, and never longer than the interval."""
        if self.interval > 0:
            return min(self.held_eviction_timeout, self.interval)
        return self.held_eviction_timeout
