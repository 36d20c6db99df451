"""``kubelet-companion descheduler``: flags over ``--config``, then the policy, then run.

Everything that can be wrong with the input (flags, config, policy) is found before any
connection is made, and reported as a ``ConfigError`` (exit 2, every bad field named).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path

import structlog

from agent.config import ConfigError, DeschedulerConfig, FieldError, load_file
from agent.config.booleans import parse_bool
from agent.config.durations import parse_duration
from agent.config.schema import Duration, HostPort
from agent.descheduler.core.policy import DeschedulerPolicy, url_problem
from agent.descheduler.live.app import run_descheduler
from agent.descheduler.live.options import PrometheusOptions, RunOptions
from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.kube.connection import DESCHEDULER, IN_CLUSTER, SERVICE_ACCOUNT_TOKEN, connect
from agent.kube.errors import KubeConfigError
from agent.kube.leaderelection import ElectionTiming
from agent.telemetry.logs import configure_logging
from agent.terminaltext import render_lines

EXIT_FAILURE = 1


def resolve_config(args: argparse.Namespace) -> DeschedulerConfig:
    """``--config`` (or defaults), with every flag the user gave laid over it."""
    config = load_file(DeschedulerConfig, getattr(args, "config", None))
    errors: list[FieldError] = []
    changes: dict[str, object] = {}
    if args.policy_config_file is not None:
        changes["policy_file"] = str(Path(args.policy_config_file).absolute())
    for field in (
        "min_cycle_spacing",
        "held_eviction_timeout",
        "descheduling_interval",
        "prometheus_timeout",
    ):
        value = getattr(args, field, None)
        if value is None:
            continue
        try:
            changes[field] = Duration(parse_duration(value))
        except ValueError as error:
            errors.append(FieldError("--" + field.replace("_", "-"), str(error)))
    for flag, name in (
        ("dry_run", "dry_run"),
        ("kubeconfig", "kubeconfig"),
        ("leader_elect", "leader_elect"),
        ("client_connection_qps", "client_connection_qps"),
        ("client_connection_burst", "client_connection_burst"),
        ("event_driven_cycles", "event_driven_cycles"),
        ("prometheus_url", "prometheus_url"),
        ("prometheus_token_file", "prometheus_token_file"),
        ("prometheus_ca_file", "prometheus_ca_file"),
        ("prometheus_insecure_skip_tls_verify", "prometheus_insecure_skip_tls_verify"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            changes[name] = value
    _bool_flag(args, "implicit_rollout_budgets", changes, errors)
    if args.metrics_bind_address is not None:
        changes["metrics_bind_address"] = HostPort(args.metrics_bind_address)
    if args.client_connection_burst is not None and args.client_connection_burst < 1:
        errors.append(FieldError("--client-connection-burst", "must be at least 1"))
    merged = dataclasses.replace(config, **changes)  # type: ignore[arg-type]  # checked above
    errors += merged.validate()
    if merged.prometheus_url and (problem := url_problem(merged.prometheus_url)):
        errors.append(FieldError("--prometheus-url", problem))
    if not merged.policy_file:
        errors.append(FieldError("--policy-config-file", "is required"))
    if errors:
        raise ConfigError("descheduler flags", errors)
    return merged


def _bool_flag(
    args: argparse.Namespace, field: str, changes: dict[str, object], errors: list[FieldError]
) -> None:
    """A ``--flag[=true|false]`` the user gave, laid over the config's ``field``."""
    value = getattr(args, field, None)
    if value is None:
        return
    try:
        changes[field] = parse_bool(value)
    except ValueError as error:
        errors.append(FieldError("--" + field.replace("_", "-"), str(error)))


def election_timing(args: argparse.Namespace) -> ElectionTiming:
    """Upstream's ``--leader-elect-lease-duration``/``-renew-deadline``/``-retry-period``."""
    errors: list[FieldError] = []
    seconds: dict[str, float] = {}
    for flag in ("lease_duration", "renew_deadline", "retry_period"):
        name = "--leader-elect-" + flag.replace("_", "-")
        try:
            seconds[flag] = parse_duration(getattr(args, f"leader_elect_{flag}"))
        except ValueError as error:
            errors.append(FieldError(name, str(error)))
    if not errors:
        try:
            return ElectionTiming(**seconds)
        except ValueError as error:
            errors.append(FieldError("--leader-elect-lease-duration", str(error)))
    raise ConfigError("descheduler flags", errors)


def options_from(config: DeschedulerConfig, args: argparse.Namespace) -> RunOptions:
    return RunOptions(
        election=election_timing(args),
        lease_namespace=args.leader_elect_resource_namespace,
        lease_name=args.leader_elect_resource_name,
        interval=float(config.descheduling_interval),
        dry_run=config.dry_run,
        output="json" if args.output == "json" else "table",
        leader_elect=config.leader_elect,
        qps=config.client_connection_qps,
        burst=config.client_connection_burst,
        concurrency=config.eviction_concurrency,
        metrics_bind_address=str(config.metrics_bind_address),
        event_driven=config.event_driven_cycles,
        min_cycle_spacing=float(config.min_cycle_spacing),
        held_eviction_timeout=float(config.held_eviction_timeout),
        prometheus=PrometheusOptions(
            url=config.prometheus_url,
            token_file=config.prometheus_token_file,
            ca_file=config.prometheus_ca_file,
            insecure_skip_tls_verify=config.prometheus_insecure_skip_tls_verify,
            timeout=float(config.prometheus_timeout),
        ),
        implicit_budgets=config.implicit_rollout_budgets,
    )


def with_in_cluster_token(
    options: RunOptions, policy: DeschedulerPolicy, source: str
) -> RunOptions:
    """In a pod, upstream sends the pod's service-account token to Prometheus when the
    policy names no Secret; so do we, unless a token file was given."""
    provider = policy.prometheus
    if (
        source != IN_CLUSTER
        or provider is None
        or provider.auth_token is not None
        or options.prometheus.token_file
    ):
        return options
    token = dataclasses.replace(options.prometheus, token_file=str(SERVICE_ACCOUNT_TOKEN))
    return dataclasses.replace(options, prometheus=token)


def run(args: argparse.Namespace) -> int:
    config = resolve_config(args)
    options = options_from(config, args)
    policy = load_policy(config.policy_file)
    # stdout carries the dry run's plan; logs go to stderr.
    configure_logging(
        level=config.log_level, fmt=config.log_format, component="descheduler", stream=sys.stderr
    )
    log = structlog.get_logger(subsystem="descheduler")
    try:
        connection = connect(config.kubeconfig, component=DESCHEDULER)
    except KubeConfigError as error:
        sys.stderr.write(render_lines([f"kubelet-companion descheduler: {error}"]))
        return EXIT_FAILURE
    if connection is None:
        sys.stderr.write(
            "kubelet-companion descheduler: no cluster (give --kubeconfig, or run in a pod)\n"
        )
        return EXIT_FAILURE
    log.info("connected to cluster", source=connection.source)
    options = with_in_cluster_token(options, policy, connection.source)
    if options.prometheus.insecure_skip_tls_verify and policy.prometheus_queries:
        log.warning("Prometheus TLS verification is off (--prometheus-insecure-skip-tls-verify)")
    api = KubeApi(connection.api_client)
    try:
        return asyncio.run(run_descheduler(policy, options, api))
    finally:
        api.close()
