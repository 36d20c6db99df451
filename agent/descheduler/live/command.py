"""``kubelet-companion descheduler``: flags over ``--config``, then the policy, then run.

Everything that can be wrong with the input (flags, config, policy) is found before any
connection is made, and reported as a ``ConfigError`` (exit 2, every bad field named).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys

import structlog

from agent.config.flags import flags_given
from agent.config.loader import load_with_flags
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.live.app import run_descheduler
from agent.descheduler.options import DeschedulerOptions
from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi
from agent.kube.connection import DESCHEDULER, IN_CLUSTER, SERVICE_ACCOUNT_TOKEN, connect
from agent.kube.errors import KubeConfigError
from agent.telemetry.logs import configure_logging
from agent.terminaltext import render_lines

EXIT_FAILURE = 1


def resolve_options(args: argparse.Namespace) -> DeschedulerOptions:
    """``--config`` (or defaults) with every flag the user gave laid over it, validated
    once; ``ConfigError`` names every bad key and flag."""
    return load_with_flags(
        DeschedulerOptions,
        getattr(args, "config", None),
        flags_given(args, DeschedulerOptions),
        flags_source="descheduler flags",
    )


def with_in_cluster_token(
    options: DeschedulerOptions, policy: DeschedulerPolicy, source: str
) -> DeschedulerOptions:
    """In a pod, upstream sends the pod's service-account token to Prometheus when the
    policy names no Secret; so do we, unless a token file was given."""
    provider = policy.prometheus
    if (
        source != IN_CLUSTER
        or provider is None
        or provider.auth_token is not None
        or options.prometheus_token_file
    ):
        return options
    return dataclasses.replace(options, prometheus_token_file=str(SERVICE_ACCOUNT_TOKEN))


def run(args: argparse.Namespace) -> int:
    options = resolve_options(args)
    policy = load_policy(options.policy_file)
    # stdout carries the dry run's plan; logs go to stderr.
    configure_logging(
        level=options.log_level, fmt=options.log_format, component="descheduler", stream=sys.stderr
    )
    log = structlog.get_logger(subsystem="descheduler")
    try:
        connection = connect(options.kubeconfig, component=DESCHEDULER)
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
    if options.prometheus_insecure_skip_tls_verify and policy.prometheus_queries:
        log.warning("Prometheus TLS verification is off (--prometheus-insecure-skip-tls-verify)")
    api = KubeApi(connection.api_client)
    try:
        return asyncio.run(run_descheduler(policy, options, api))
    finally:
        api.close()
