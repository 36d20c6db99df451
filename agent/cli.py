"""The one console script, ``kubelet-companion``, and its exit codes.

0: OK. 2: bad usage or bad config (nothing was applied). 1: a runtime failure.

stdout carries what a command prints and nothing else, so ``--json`` is always one JSON
document: logging is set up onto stderr before anything else runs (a warning while the
config or the cluster is loaded included); ``agent`` and ``descheduler`` set it up again with
their configured level and format, on stderr too.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import signal
import sys
from collections.abc import Callable, Sequence

from agent import __version__
from agent.config import AgentConfig, ConfigError, load_agent_config
from agent.telemetry.logs import configure_logging
from agent.terminaltext import render_lines

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="YAML config file (defaults apply when omitted)",
    )
    return common


def agent_config(args: argparse.Namespace) -> AgentConfig:
    return load_agent_config(getattr(args, "config", None))


def _stop_during_start_up(signum: int, frame: object) -> None:  # noqa: ARG001 - handler signature
    # Until the event loop installs its own handler, SIGTERM means what Ctrl-C means.
    raise KeyboardInterrupt


def _cmd_agent(args: argparse.Namespace) -> int:
    from agent.daemon import run_agent  # noqa: PLC0415 - keep start-up of other commands light

    return asyncio.run(run_agent(agent_config(args)))


def _cmd_descheduler(args: argparse.Namespace) -> int:
    from agent.descheduler.live.command import run  # noqa: PLC0415 - keep start-up of other commands light

    return run(args)


def _cmd_descheduler_plan(args: argparse.Namespace) -> int:
    from agent.descheduler.offline.command import run  # noqa: PLC0415 - keep start-up of other commands light

    return run(args)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from agent.doctor.command import gather  # noqa: PLC0415
    from agent.doctor.render import render_json, render_table  # noqa: PLC0415

    config = agent_config(args)
    report = gather(config, config.resolved_node_name)
    sys.stdout.write(render_json(report) if args.json else render_table(report))
    return EXIT_OK


def _cmd_version(args: argparse.Namespace) -> int:  # noqa: ARG001 - every handler takes args
    print(f"kubelet-companion {__version__}")
    return EXIT_OK


def _descheduler_plan_flags(parser: argparse.ArgumentParser) -> None:
    """``descheduler plan``: the cycle on a snapshot file (flags as in ``agent.descheduler``)."""
    from agent.descheduler.options import add_implicit_budgets_flag  # noqa: PLC0415

    add = parser.add_argument
    add(
        "--snapshot",
        metavar="FILE",
        required=True,
        help="kubectl get nodes,pods,pdb,namespaces,priorityclasses,deployments,replicasets,"
        "statefulsets -A -o json (gzip accepted)",
    )
    add("--policy-config-file", metavar="FILE", required=True, help="DeschedulerPolicy")
    add("--node-reports", metavar="FILE", help="kubectl get nodereports -o json (gzip accepted)")
    add(
        "--usage",
        metavar="FILE",
        help="what the policy's metrics sources answered (Prometheus queries, NodeMetrics, "
        "PodMetrics; docs/plan.md), when it reads one",
    )
    add("--output", choices=("table", "json"), default="table", help="output format")
    add("--out", metavar="FILE", help="write the plan to FILE (atomically) instead of stdout")
    add(
        "--scheduler-config",
        metavar="FILE",
        help="the cluster's KubeSchedulerConfiguration: destinations are predicted with its "
        "default-scheduler profile (default: kube-scheduler's default profile)",
    )
    add(
        "--captured-at",
        metavar="TIME",
        help="RFC 3339 time the snapshot was taken (default: the newest time the API server "
        "stamped on one of its objects); NodeReports are judged at it, pod ages count to it",
    )
    add(
        "--max-snapshot-bytes",
        type=int,
        metavar="N",
        help="refuse a snapshot or NodeReports file (or what a gzip expands to) larger than N "
        "bytes, counted as read (FIFOs too); N >= 1 (default 8 GiB; 0 is refused)",
    )
    add_implicit_budgets_flag(parser)


def build_parser() -> argparse.ArgumentParser:
    from agent.descheduler.options import add_flags  # noqa: PLC0415
    from agent.readiness import commands as readiness_commands  # noqa: PLC0415
    from agent.report import commands as report_commands  # noqa: PLC0415
    from agent.shutdown import commands as shutdown_commands  # noqa: PLC0415
    from agent.swap import commands as swap_commands  # noqa: PLC0415

    common = _common()
    parser = argparse.ArgumentParser(
        prog="kubelet-companion",
        description="A per-node agent beside the kubelet, and a thin central descheduler.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("agent", parents=[common], help="run the node agent").set_defaults(
        handler=_cmd_agent
    )
    descheduler = sub.add_parser(
        "descheduler", parents=[common], help="run the central descheduler"
    )
    add_flags(descheduler)
    descheduler.set_defaults(handler=_cmd_descheduler)
    offline = descheduler.add_subparsers(dest="descheduler_command", metavar="plan")
    plan = offline.add_parser(
        "plan", help="plan offline on a snapshot file: evictions, destinations, utilization"
    )
    _descheduler_plan_flags(plan)
    plan.set_defaults(handler=_cmd_descheduler_plan)
    doctor = sub.add_parser("doctor", parents=[common], help="check this node and the config")
    doctor.add_argument("--json", action="store_true", help="print JSON instead of a table")
    doctor.set_defaults(handler=_cmd_doctor)
    sub.add_parser("version", parents=[common], help="print the version").set_defaults(
        handler=_cmd_version
    )
    for module in (shutdown_commands, swap_commands, readiness_commands, report_commands):
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # Inside the try: a SIGTERM from the first instruction on is a clean stop.
        signal.signal(signal.SIGTERM, _stop_during_start_up)
        # Names and messages can carry any character an input file held (lone surrogates
        # too): the CLI escapes what the terminal's encoding cannot show instead of failing.
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(errors="backslashreplace")
        configure_logging(stream=sys.stderr)
        args = build_parser().parse_args(argv)
        handler: Handler = args.handler
        return handler(args)
    except ConfigError as error:
        sys.stderr.write(render_lines(error.lines()))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
