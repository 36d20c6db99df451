"""The descheduler's options: one frozen object, every default in it once, flags bound to it.

As upstream's ``cmd/descheduler/app/options``: one struct holds what the process runs with,
and each command-line flag is bound to one of its fields (``add_flags``; upstream's names
where they mean the same). Most fields are keys of our ``--config`` file too (camelCase);
a flag the user gives wins over the file. The config schema reads both
(``agent.config.schema.load_layers``): every value is parsed and bounded where it came from
and named by its key or its flag, then ``validate`` runs once on the result; anything bad
exits 2 before a connection is made. The live process reads it (``live``), and so does
``descheduler plan`` (``offline``) for the one flag it shares, ``--implicit-rollout-budgets``.

This module is imported to build the command line of every command, so it stays light: the
two rules that live in heavier modules (the Lease timing's, a Prometheus URL's) are
imported when they are checked.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent.config.errors import FieldError
from agent.config.flags import bind_flag
from agent.config.schema import Duration, HostPort, setting
from agent.descheduler.core.placement.replacements import IN_FLIGHT
from agent.kubesemantics.wellknown import SYSTEM_NAMESPACE

if TYPE_CHECKING:
    from agent.kube.leaderelection import ElectionTiming

LEASE_NAMESPACE = SYSTEM_NAMESPACE
LEASE_NAME = "descheduler"
"""Upstream's Lease: leader election, the churn guard's memory and our taint record."""


def _absolute(path: str) -> str | None:
    return None if path.startswith("/") else "must be an absolute path"


def _prometheus_url(url: str) -> str | None:
    # The policy's rule for its own URL, so both are judged alike.
    from agent.descheduler.core.policy import url_problem  # noqa: PLC0415 - keep the CLI light

    return (url_problem(url) or None) if url else None


@dataclass(frozen=True)
class DeschedulerOptions:
    """Everything the ``descheduler`` process runs with (besides its policy)."""

    policy_file: str = setting("", flag="--policy-config-file", check=_absolute)
    kubeconfig: str = setting("", flag="--kubeconfig")
    descheduling_interval: Duration = setting(Duration(0.0), flag="--descheduling-interval")
    """0: one cycle, then exit (unless ``event_driven_cycles``)."""
    dry_run: bool = setting(False, flag="--dry-run")
    output: Literal["table", "json"] = setting("table", flag="--output", flag_only=True)
    """How a dry run prints its plan."""
    leader_elect: bool = setting(False, flag="--leader-elect")
    lease_namespace: str = setting(
        LEASE_NAMESPACE, flag="--leader-elect-resource-namespace", flag_only=True
    )
    lease_name: str = setting(LEASE_NAME, flag="--leader-elect-resource-name", flag_only=True)
    lease_duration: Duration = setting(
        Duration(137.0), flag="--leader-elect-lease-duration", flag_only=True
    )
    renew_deadline: Duration = setting(
        Duration(107.0), flag="--leader-elect-renew-deadline", flag_only=True
    )
    retry_period: Duration = setting(
        Duration(26.0), flag="--leader-elect-retry-period", flag_only=True
    )
    """The Lease timings are upstream descheduler's defaults."""
    client_connection_qps: float = setting(50.0, flag="--client-connection-qps")
    """0 = no limit. kube-scheduler's client defaults (50/100), not client-go's 5/10 that
    upstream's descheduler gets when its flags are unset: a descheduler is idle between
    cycles and then sends a burst of evictions, and every second of that burst is a second
    the cluster stays unbalanced; the API server's priority and fairness protects it from
    any one client, and 50/s is what the scheduler, which creates the replacements, is
    allowed anyway."""
    client_connection_burst: int = setting(100, minimum=1, flag="--client-connection-burst")
    eviction_concurrency: int = setting(IN_FLIGHT, minimum=1, maximum=256)
    """Evictions in flight at once (upstream: 1); the offline plan places replacements in
    windows of as many."""
    metrics_bind_address: HostPort = setting(
        HostPort("127.0.0.1:9478"), flag="--metrics-bind-address"
    )
    log_level: Literal["debug", "info", "warning", "error"] = setting("info")
    log_format: Literal["auto", "json", "console"] = setting("auto")
    event_driven_cycles: bool = setting(False, flag="--event-driven-cycles")
    """Ours: also run a cycle soon after a node becomes Ready, a NodeReport crosses the
    LowNodeUtilization thresholds, or a critical add-on goes Unschedulable."""
    min_cycle_spacing: Duration = setting(Duration(30.0), minimum=0, flag="--min-cycle-spacing")
    """Event-driven cycles never start sooner than this after the previous cycle."""
    held_eviction_timeout: Duration = setting(
        Duration(60.0), minimum=0, flag="--held-eviction-timeout"
    )
    """Ours: how long a cycle waits for a PodDisruptionBudget to allow an eviction it held
    (never past the next interval); 0 reports them blocked at once, as a dry run does."""
    prometheus_url: str = setting(
        "", key="prometheusURL", flag="--prometheus-url", check=_prometheus_url
    )
    """Ours: replaces the policy's Prometheus URL (``metricsProviders``), e.g. outside the
    cluster."""
    prometheus_token_file: str = setting("", flag="--prometheus-token-file")
    """Ours: a file holding the Prometheus bearer token, read before every query ("" for
    none; in a pod, the command picks the service-account token when the policy names no
    Secret, as upstream does)."""
    prometheus_ca_file: str = setting("", key="prometheusCAFile", flag="--prometheus-ca-file")
    """Ours: trust only this CA for Prometheus (default: the system's, plus the
    service-account CA in a pod)."""
    prometheus_insecure_skip_tls_verify: bool = setting(
        False, key="prometheusInsecureSkipTLSVerify", flag="--prometheus-insecure-skip-tls-verify"
    )
    prometheus_timeout: Duration = setting(
        Duration(30.0), minimum=0.001, flag="--prometheus-timeout"
    )
    """Ours: each Prometheus attempt's connect timeout, and again its answer's."""
    implicit_rollout_budgets: bool = setting(True, flag="--implicit-rollout-budgets")
    """Ours: a workload no PodDisruptionBudget selects loses no more pods at once than its
    rollout's ``maxUnavailable`` (at least one); the rest wait for replacements to be Ready
    (``core.rules.rollouts``). Off, the workload caches are not kept either."""

    def validate(self) -> list[FieldError]:
        """The rules across fields, once the fields themselves are good."""
        errors = []
        if not self.policy_file:
            errors.append(FieldError("--policy-config-file", "is required"))
        if self.leader_elect and self.descheduling_interval <= 0:
            errors.append(
                FieldError("leaderElect", "needs a positive deschedulingInterval (as upstream)")
            )
        try:
            self.election()
        except ValueError as error:
            errors.append(FieldError("--leader-elect-lease-duration", str(error)))
        return errors

    def election(self) -> ElectionTiming:
        """The Lease timings; ``ValueError`` if a leader could outlive its lease (the
        elector's rule, client-go's)."""
        from agent.kube.leaderelection import ElectionTiming  # noqa: PLC0415 - keep the CLI light

        return ElectionTiming(self.lease_duration, self.renew_deadline, self.retry_period)

    @property
    def one_shot(self) -> bool:
        """One cycle, then exit: no interval, and no triggers to wait for."""
        return self.descheduling_interval <= 0 and not self.event_driven_cycles

    @property
    def hold_seconds(self) -> float:
        """The cycle's hold: the timeout, and never longer than the interval."""
        if self.descheduling_interval > 0:
            return min(self.held_eviction_timeout, self.descheduling_interval)
        return self.held_eviction_timeout


def _absolute_path(text: str) -> str:
    return str(Path(text).absolute())


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Every flag of ``descheduler``, bound to its field; each overrides ``--config``."""
    add = functools.partial(bind_flag, parser, DeschedulerOptions)
    add(
        "policy_file",
        help="DeschedulerPolicy (descheduler/v1alpha2)",
        metavar="FILE",
        convert=_absolute_path,
    )
    add(
        "descheduling_interval",
        help="Go duration between cycles (default {default}); 0 runs one cycle and exits",
    )
    add("dry_run", help="plan and print, evict nothing")
    add("output", help="dry-run output format (default {default})")
    add("kubeconfig", help="kubeconfig (default: in-cluster, ~/.kube/config)", metavar="FILE")
    add("leader_elect", help="only the Lease holder evicts")
    add(
        "lease_namespace",
        help="namespace of the leader Lease (upstream's default: {default})",
        metavar="NAMESPACE",
    )
    add(
        "lease_name",
        help="name of the leader Lease (upstream's default: {default})",
        metavar="NAME",
    )
    for timing in ("lease_duration", "renew_deadline", "retry_period"):
        add(timing, help="Go duration (default {default})")
    add(
        "client_connection_qps",
        help="API requests per second ({default}; Events have a bucket of their own)",
        metavar="QPS",
    )
    add("client_connection_burst", help="API request burst ({default})", metavar="N")
    add(
        "metrics_bind_address",
        help="/metrics, /healthz, /readyz (default {default})",
        metavar="HOST:PORT",
    )
    add(
        "event_driven_cycles",
        help="also run a cycle soon after a node becomes Ready, a NodeReport crosses the "
        "LowNodeUtilization thresholds or a critical add-on goes Unschedulable",
    )
    add(
        "min_cycle_spacing",
        help="event-driven cycles start at least this long after the previous one ({default})",
    )
    add(
        "held_eviction_timeout",
        help="how long a cycle waits for a PodDisruptionBudget to allow the evictions it "
        "refused when planned ({default}, never past the next interval; 0: report them "
        "blocked)",
    )
    add(
        "prometheus_url",
        help="Prometheus to query instead of the policy's metricsProviders URL",
        metavar="URL",
    )
    add(
        "prometheus_token_file",
        help="bearer token for Prometheus, read before every query (default: the policy's "
        "Secret; in a pod without one, the service-account token)",
        metavar="FILE",
    )
    add(
        "prometheus_ca_file",
        help="trust only this CA for Prometheus (default: the system's, and the "
        "service-account CA in a pod)",
        metavar="FILE",
    )
    add("prometheus_insecure_skip_tls_verify", help="do not check Prometheus's certificate")
    add(
        "prometheus_timeout",
        help="each Prometheus attempt's connect and read timeout ({default})",
    )
    add_implicit_budgets_flag(parser)


def add_implicit_budgets_flag(parser: argparse.ArgumentParser) -> None:
    """``--implicit-rollout-budgets[=true|false]``, for the live run and ``plan`` alike."""
    bind_flag(
        parser,
        DeschedulerOptions,
        "implicit_rollout_budgets",
        help="a workload without a PodDisruptionBudget loses no more pods at once than its "
        "rollout's maxUnavailable ({default}, the default); the others wait for replacements",
        takes_value=True,
    )
