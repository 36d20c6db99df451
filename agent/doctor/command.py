"""Gathering what ``doctor`` shows: node facts, logind, and whether the cluster answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.config import AgentConfig
from agent.doctor.report import ClusterStatus, DoctorReport, build_report
from agent.doctor.reportline import report_section
from agent.kube.api import KubeApi
from agent.kube.connection import AGENT, connect
from agent.kube.errors import KubeConfigError, KubeError
from agent.logind.dropin import scan_dropins
from agent.logind.dropin_order import Override, overriding_dropins
from agent.logind.facts import read_logind_facts
from agent.node.facts import collect_node_facts
from agent.node.paths import HostPaths


def check_cluster(config: AgentConfig) -> ClusterStatus:
    try:
        connection = connect(config.kubeconfig, component=AGENT)
    except KubeConfigError as error:
        return ClusterStatus("misconfigured", str(error))
    if connection is None:
        return ClusterStatus("node-only", "no in-cluster config, KUBECONFIG or ~/.kube/config")
    api = KubeApi(connection.api_client, request_timeout=min(config.kube.request_timeout, 5.0))
    try:
        version = api.request("GET", "/version")
    except KubeConfigError as error:  # e.g. an untrusted certificate: retrying will not help
        return ClusterStatus("misconfigured", f"{connection.source}: {error}")
    except KubeError as error:
        return ClusterStatus("unreachable", f"{connection.source}: {error}")
    finally:
        connection.api_client.close()  # type: ignore[no-untyped-call]
    return ClusterStatus(
        "reachable", f"{connection.source}, server {version.get('gitVersion', '?')}"
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
    logind = asyncio.run(read_logind_facts(timeout=config.shutdown.dbus_call_timeout))
    report = build_report(
        config,
        node_name,
        facts,
        logind,
        check_cluster(config),
        dropin_overrides=find_dropin_overrides(config, paths),
    )
    rows, warnings = report_section(config)
    report.sections["report"] = rows
    report.warnings.extend(warnings)
    return report
