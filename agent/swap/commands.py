"""``kubelet-companion swap report [--json]``: the audit, once, for a person or a script.

It reads the node and the kubepods tree directly and lists this node's pods once from the
API server's watch cache (no NodeState in a one-shot command). Without a cluster it still
prints the node summary and every container cgroup, unmapped. Exit 0 when the report is
complete, 1 when the pods could not be listed (the node part is printed anyway).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, load_agent_config
from agent.kube.errors import KubeConfigError, KubeError
from agent.node.containercgroups import KubepodsTree
from agent.node.facts import collect_node_facts
from agent.node.kubeletconfig import KubeletConfigError, read_kubelet_eviction
from agent.node.paths import HostPaths
from agent.swap.audit import AuditReport, build_report
from agent.swap.eviction import check_eviction_threshold
from agent.swap.render import render_json, render_table
from agent.swap.summary import kubelet_swap_capacity, node_summary, report_warnings
from agent.terminaltext import printable

EXIT_OK = 0
EXIT_FAILURE = 1


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``swap report``."""
    swap = subparsers.add_parser("swap", parents=[common], help="swap limits, audit and metrics")
    commands = swap.add_subparsers(dest="swap_command", required=True, metavar="COMMAND")
    report = commands.add_parser(
        "report",
        parents=[common],
        help="expected vs actual memory.swap.max per container, and the node's swap",
    )
    report.add_argument("--json", action="store_true", help="print JSON instead of a table")
    report.set_defaults(handler=_cmd_report)


def _cluster_view(
    config: AgentConfig, node_name: str
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str | None]:
    """This node's pods and Node object; ``([], None, None)`` in node-only mode."""
    from agent.kube.session import api_session, get_node, list_node_pods  # noqa: PLC0415 - the client is slow to import

    try:
        with api_session(config) as api:
            if api is None:
                return [], None, None
            return list_node_pods(api, node_name), get_node(api, node_name), None
    except KubeConfigError as error:
        return [], None, f"cannot load the cluster config: {error}"
    except KubeError as error:
        return [], None, f"cannot list this node's pods: {error}"


def gather(config: AgentConfig, node_name: str) -> tuple[AuditReport, list[str], str | None]:
    swap = config.memory_swap
    paths = HostPaths.from_config(config.host_paths)
    facts = collect_node_facts(paths)
    scan = KubepodsTree(
        paths.cgroup_root, driver=swap.cgroup_driver, cgroup_root=swap.cgroup_root
    ).scan()
    pods, node, problem = _cluster_view(config, node_name)
    summary = node_summary(
        swap,
        memory=facts.memory,
        cgroups=facts.cgroups,
        noswap=facts.tmpfs_noswap,
        scan=scan,
        page_size=os.sysconf("SC_PAGE_SIZE"),
        kubelet_capacity=kubelet_swap_capacity(node),
    )
    report = build_report(summary, pods, scan)
    warnings = report_warnings(report)
    if swap.check_eviction_threshold:
        try:
            settings = read_kubelet_eviction(Path(swap.kubelet_config_path))
        except KubeletConfigError as error:
            warnings.append(f"eviction check skipped: {error}")
        else:
            check = check_eviction_threshold(
                settings,
                memory_capacity=facts.memory.memory_total_bytes,
                min_free_kbytes=facts.kernel.min_free_kbytes,
                swap_on=facts.memory.swap_on,
            )
            if check.warning:
                warnings.append(check.warning)
    if problem:
        warnings.append(problem)
    return report, warnings, problem


def _cmd_report(args: argparse.Namespace) -> int:

    config = load_agent_config(getattr(args, "config", None))
    report, warnings, problem = gather(config, config.resolved_node_name)
    render = render_json if args.json else render_table
    sys.stdout.write(render(report, warnings))
    if problem:
        print(printable(f"swap report: {problem}"), file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
