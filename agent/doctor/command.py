"""Gathering what ``doctor`` shows: node facts, the kubepods tree (where the one cgroup finder
finds it), logind, and whether the cluster answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.config import AgentConfig
from agent.doctor.report import ClusterStatus, DoctorReport, build_report
from agent.doctor.reportline import report_section
from agent.kube.api import KubeApi
from agent.kube.connection import AGENT, connect
from agent.kube.errors import KubeConfigError, KubeError
from agent.kube.tokenclaims import bearer_token, decode_token, node_binding_problem
from agent.logind.dropin import scan_dropins
from agent.logind.dropin_order import Override, overriding_dropins
from agent.logind.facts import read_logind_facts
from agent.node.facts import collect_node_facts
from agent.node.kubepods import KubepodsFinder
from agent.node.paths import HostPaths


def check_cluster(config: AgentConfig, node_name: str = "") -> ClusterStatus:
    """Whether the cluster answers, and which node the credentials name (``node_name``: the
    node the agent runs as, checked against the token's node when given)."""
    try:
        connection = connect(config.kubeconfig, component=AGENT)
    except KubeConfigError as error:
        return ClusterStatus("misconfigured", str(error))
    if connection is None:
        return ClusterStatus("node-only", "no in-cluster config, KUBECONFIG or ~/.kube/config")
    claims = decode_token(bearer_token(connection.api_client) or "")
    credentials = claims.describe() if claims is not None else "no service-account token"
    problem = node_binding_problem(claims, node_name) if node_name else None
    api = KubeApi(connection.api_client, request_timeout=min(config.kube.request_timeout, 5.0))
    try:
        version = api.request("GET", "/version")
    except KubeConfigError as error:  # e.g. an untrusted certificate: retrying will not help
        return ClusterStatus("misconfigured", f"{connection.source}: {error}", credentials, problem)
    except KubeError as error:
        return ClusterStatus("unreachable", f"{connection.source}: {error}", credentials, problem)
    finally:
        connection.api_client.close()  # type: ignore[no-untyped-call]
    return ClusterStatus(
        "reachable",
        f"{connection.source}, server {version.get('gitVersion', '?')}",
        credentials,
        problem,
    )


def find_dropin_overrides(config: AgentConfig, paths: HostPaths) -> list[Override]:
    """The logind drop-ins that would decide InhibitDelayMaxSec instead of ours."""
    ours, files = scan_dropins(
        Path(config.shutdown.logind_drop_in_path), etc=paths.etc, run=paths.run
    )
    return overriding_dropins(ours, files)


def gather(config: AgentConfig, node_name: str) -> DoctorReport:
    paths = HostPaths.from_config(config.host_paths)
    facts = collect_node_facts(paths)
    swap = config.memory_swap
    finder = KubepodsFinder(
        paths.cgroup_root, driver=swap.cgroup_driver, cgroup_root=swap.cgroup_root
    )
    logind = asyncio.run(read_logind_facts(timeout=config.shutdown.dbus_call_timeout))
    report = build_report(
        config,
        node_name,
        facts,
        logind,
        check_cluster(config, node_name),
        dropin_overrides=find_dropin_overrides(config, paths),
        kubepods=finder.find(),
    )
    rows, warnings = report_section(config)
    report.sections["report"] = rows
    report.warnings.extend(warnings)
    return report
