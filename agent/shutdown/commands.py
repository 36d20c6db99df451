"""``kubelet-companion shutdown plan [--json]``: what a shutdown would do now, changing nothing.

It lists this node's pods once, from the API server's watch cache (a one-shot command has
no NodeState), and groups them exactly as the agent would at shutdown. Exit 0 with a plan,
2 for a bad config, 1 when the pods could not be listed.
"""

from __future__ import annotations

import argparse
import sys

from agent.config import load_agent_config
from agent.config.shutdown import budget_seconds
from agent.kube.errors import KubeConfigError, KubeError
from agent.shutdown.phases import plan_phases
from agent.shutdown.render import render_json, render_table
from agent.terminaltext import printable

EXIT_OK = 0
EXIT_FAILURE = 1


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``shutdown plan``."""
    shutdown = subparsers.add_parser(
        "shutdown", parents=[common], help="graceful node shutdown by pod priority"
    )
    commands = shutdown.add_subparsers(dest="shutdown_command", required=True, metavar="COMMAND")
    plan = commands.add_parser(
        "plan",
        parents=[common],
        help="print the phase plan for the pods now on this node (a dry run)",
    )
    plan.add_argument("--json", action="store_true", help="print JSON instead of a table")
    plan.set_defaults(handler=_cmd_plan)


def _cmd_plan(args: argparse.Namespace) -> int:
    from agent.kube.session import api_session, list_node_pods  # noqa: PLC0415 - slow import

    config = load_agent_config(getattr(args, "config", None))
    node = config.resolved_node_name
    if budget_seconds(config.shutdown_buckets) == 0:
        print(
            "graceful node shutdown is off: set shutdownGracePeriod (and "
            "shutdownGracePeriodCriticalPods) or shutdownGracePeriodByPodPriority",
            file=sys.stderr,
        )
        return EXIT_OK
    note = None
    pods = []
    try:
        with api_session(config) as api:
            if api is None:
                note = "No cluster is configured (node-only mode): there are no pods to terminate."
            else:
                pods = list_node_pods(api, node)
    except KubeConfigError as error:
        print(printable(f"cannot load the cluster config: {error}"), file=sys.stderr)
        return EXIT_FAILURE
    except KubeError as error:
        print(printable(f"cannot list the pods of node {node}: {error}"), file=sys.stderr)
        return EXIT_FAILURE
    plan = plan_phases(
        config.shutdown_buckets,
        pods,
        include_daemon_set_pods=config.shutdown.include_daemon_set_pods,
    )
    render = render_json if args.json else render_table
    sys.stdout.write(render(plan, node=node, mode=config.shutdown.mode, note=note))
    return EXIT_OK
