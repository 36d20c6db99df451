"""``kubelet-companion readiness``: what the gate waits for on this node, and its verdict.

It judges the same objects with the same code as the running agent, so "why is my node still
tainted?" has one answer. Exit codes: 0 when the report was produced (ready or not), 1 when
the cluster could not be read, 2 for bad usage or config.
"""

from __future__ import annotations

import argparse
import sys

from agent.config import load_agent_config
from agent.terminaltext import printable

EXIT_OK = 0
EXIT_FAILURE = 1


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: every command's parser is built at start-up, and the API
    # client's import (which the gate's inputs need) is most of a start-up that never
    # talks to a cluster (version, --help, shutdown plan, swap report).
    from agent.kube.errors import KubeConfigError, KubeError, NotFound  # noqa: PLC0415
    from agent.kube.session import api_session  # noqa: PLC0415
    from agent.readiness.gather import read_snapshot  # noqa: PLC0415
    from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION  # noqa: PLC0415
    from agent.readiness.report import build_report, render_json, render_text  # noqa: PLC0415
    from agent.readiness.settings import GateSettings, evaluate  # noqa: PLC0415

    config = load_agent_config(getattr(args, "config", None))
    node_name = args.node or config.resolved_node_name
    settings = GateSettings.from_config(config.readiness)
    try:
        with api_session(config) as api:
            if api is None:
                print("readiness: no cluster configured (node-only mode)", file=sys.stderr)
                return EXIT_FAILURE
            snapshot = read_snapshot(api, node_name, settings)
    except KubeConfigError as error:
        print(printable(f"readiness: cannot load the cluster config: {error}"), file=sys.stderr)
        return EXIT_FAILURE
    except NotFound:
        print(printable(f"readiness: node {node_name} does not exist"), file=sys.stderr)
        return EXIT_FAILURE
    except KubeError as error:
        print(printable(f"readiness: cannot read the cluster: {error}"), file=sys.stderr)
        return EXIT_FAILURE
    assessment, view = evaluate(settings, snapshot)
    annotations = ((snapshot.node or {}).get("metadata") or {}).get("annotations") or {}
    report = build_report(
        node_name, assessment, view, settings, annotations.get(BOOTSTRAP_COMPLETED_ANNOTATION)
    )
    sys.stdout.write(render_json(report) if args.json else render_text(report))
    return EXIT_OK


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``readiness``."""
    parser = subparsers.add_parser(
        "readiness",
        parents=[common],
        help="show what the node readiness gate waits for, and its verdict",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--node", metavar="NAME", default="", help="the node to check (default: this node)"
    )
    parser.set_defaults(handler=_run)
