"""``kubelet-companion report``: what this node's NodeReport would carry now, without writing it.

Two samples ``--interval`` apart (CPU is a rate), shown raw rather than smoothed. With a
cluster it adds the Node's allocatable and names the pods; node-only it shows the usage and
the pods by cgroup UID. The gate, shutdown and swap sections come from the running agent's
other controllers, which this one-shot process does not run (and this capability may not
import): it shows them as the agent last saved them in its report record
(``agent.node.reportrecord``), with their age, or says that no running agent has published
them. Exit codes: 0 OK, 1 when the node cannot be read or the cluster could not be read
(the node part is still printed), 2 for bad usage or config.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from agent.columns import aligned
from agent.config import AgentConfig, load_agent_config
from agent.config.durations import format_duration
from agent.config.schema import Duration
from agent.kube.errors import KubeError, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import NODES
from agent.kubesemantics.quantities import format_bytes
from agent.kubesemantics.timestamps import rfc3339
from agent.node.kernel import read_boot_id
from agent.node.paths import HostPaths
from agent.node.reportrecord import load_report_record
from agent.report.document import BOARD_SECTIONS, Capacity, Identity, build_status
from agent.report.sampling import NodeSampler
from agent.report.usage import UsageTracker
from agent.runtime.status import BoardSnapshot
from agent.terminaltext import printable, render_lines

EXIT_OK = 0
EXIT_FAILURE = 1

NOT_PUBLISHED = "no running agent has published them"


def _cluster(
    config: AgentConfig, node_name: str
) -> tuple[JsonObject | None, list[JsonObject] | None, str]:
    """The Node and its pods, ``(None, None, why)`` node-only or when unreadable."""
    from agent.kube.session import api_session, list_node_pods  # noqa: PLC0415 - light start-up

    try:
        with api_session(config) as api:
            if api is None:
                return None, None, ""
            node: JsonObject | None
            try:
                node = api.get(NODES, node_name)
            except NotFound:
                node = None
            return node, list_node_pods(api, node_name), ""
    except KubeError as error:
        return None, None, f"cannot read the cluster: {error}"


def build(config: AgentConfig, node_name: str, interval: float) -> tuple[JsonObject, str]:
    paths = HostPaths.from_config(config.host_paths)
    sampler = NodeSampler(paths, config.memory_swap, time.monotonic)
    tracker = UsageTracker(weight=1.0)
    tracker.add(sampler.read())
    time.sleep(interval)
    tracker.add(sampler.read())
    node, pods, problem = _cluster(config, node_name)
    last = tracker.last
    assert last is not None  # noqa: S101 - two samples were just added
    status = build_status(
        identity=Identity(_version(), read_boot_id(paths) or "", config.report.heartbeat),
        capacity=Capacity(last.node.cpus, last.node.memory_total, last.node.swap_total),
        tracker=tracker,
        board=BoardSnapshot(),
        observed_time=time.time(),
        node=node,
        pods=pods,
    )
    for key in BOARD_SECTIONS:
        status.pop(key, None)  # the other controllers' to say, not ours to guess
    return status, problem


def from_agent(path: Path, now: float) -> JsonObject:
    """The gate, shutdown and swap sections as the running agent last saved them, with their
    time and age; ``{"sections": {}, "note": ...}`` when there are none."""
    try:
        record = load_report_record(path)
    except (OSError, ValueError) as error:
        return {"sections": {}, "note": f"{NOT_PUBLISHED} (cannot read {path}: {error})"}
    if record is None or not record.sections or record.sections_time is None:
        return {"sections": {}, "note": NOT_PUBLISHED}
    sections = {key: record.sections[key] for key in BOARD_SECTIONS if key in record.sections}
    return {
        "sections": sections,
        "time": rfc3339(record.sections_time),
        "ageSeconds": max(0, round(now - record.sections_time)),
        "stateFile": str(path),
    }


def _version() -> str:
    from agent import __version__  # noqa: PLC0415

    return __version__


def _agent_lines(agent: JsonObject) -> list[str]:
    sections = agent["sections"]
    if not sections:
        return [f"  readiness, shutdown, swap: {agent['note']}"]
    lines = [
        f"  from the running agent, {format_duration(agent['ageSeconds'])} ago ({agent['time']}):"
    ]
    if (readiness := sections.get("readiness")) is not None:
        waiting = ", ".join(readiness.get("waitingFor") or []) or "nothing"
        verdict = "held" if readiness.get("gateHeld") else "lifted"
        lines.append(f"    readiness  gate {verdict}, waiting for {waiting}")
    if (shutdown := sections.get("shutdown")) is not None:
        details = [
            f"{label} {shutdown[key]}"
            for key, label in (("startTime", "since"), ("phase", "phase"), ("budgetEnd", "until"))
            if key in shutdown
        ]
        lines.append("    shutdown   " + ", ".join([str(shutdown.get("state")), *details]))
    if (swap := sections.get("swap")) is not None:
        drifted = swap.get("driftedContainers") or []
        cgroup = "cgroup v2" if swap.get("cgroupV2") else "cgroup v1"
        noswap = "tmpfs noswap" if swap.get("noswapSupported") else "no tmpfs noswap"
        lines.append(
            f"    swap       {swap.get('behavior')}, {cgroup}, {noswap}, {len(drifted)} drifted"
            + (f" ({', '.join(drifted)})" if drifted else "")
        )
    return lines


def render_text(node_name: str, status: JsonObject, agent: JsonObject | None = None) -> str:
    usage, capacity = status["usage"], status["capacity"]
    lines = [
        f"NodeReport {node_name} (not written; sampled {status['observedTime']})",
        f"  cpu     {usage['cpu']:.3f} of {capacity['cpu']} cores ({usage['cpuPercent']}%)",
        f"  memory  {format_bytes(usage['memory'])} of {format_bytes(capacity['memory'])} "
        f"working set ({usage['memoryPercent']}%)",
        f"  swap    {format_bytes(usage['swap'])} of {format_bytes(capacity['swap'])}",
    ]
    if "allocatable" in status:
        allocatable = status["allocatable"]
        lines.append(
            f"  allocatable  {allocatable['cpu']} cores, {format_bytes(allocatable['memory'])}"
        )
    for resource, kinds in (usage.get("pressure") or {}).items():
        lines.append(
            f"  pressure {resource}: "
            + ", ".join(f"{kind} {value}%" for kind, value in sorted(kinds.items()))
        )
    if agent is not None:
        lines += _agent_lines(agent)
    rows: list[list[str]] = [["NAMESPACE", "NAME", "UID", "CPU", "MEMORY", "SWAP"]]
    rows += [
        [
            pod.get("namespace", "-"),
            pod.get("name", "-"),
            pod["uid"],
            f"{pod['cpu']:.3f}",
            format_bytes(pod["memory"]),
            format_bytes(pod["swap"]),
        ]
        for pod in status["pods"]
    ]
    lines += ["", *aligned(rows)]
    return render_lines(lines)


def _run(args: argparse.Namespace) -> int:
    config = load_agent_config(getattr(args, "config", None))
    node_name = config.resolved_node_name
    try:
        status, problem = build(config, node_name, args.interval)
    except OSError as error:
        print(printable(f"report: cannot read the node: {error}"), file=sys.stderr)
        return EXIT_FAILURE
    agent = from_agent(config.report_state_file, time.time())
    status.update(agent["sections"])
    output: Any = {"node": node_name, "status": status, "fromAgent": agent}
    sys.stdout.write(
        json.dumps(output, indent=2) + "\n" if args.json else render_text(node_name, status, agent)
    )
    if problem:
        print(printable(f"report: {problem}"), file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _interval(text: str) -> float:
    from agent.config.durations import parse_duration  # noqa: PLC0415

    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not 0.05 <= seconds <= 60:
        raise argparse.ArgumentTypeError("must be between 50ms and 60s")
    return Duration(seconds)


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``report``."""
    parser = subparsers.add_parser(
        "report",
        parents=[common],
        help="print what this node's NodeReport would carry now (nothing is written)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        help="time between the two samples CPU rates need (Go duration, default 1s)",
    )
    parser.set_defaults(handler=_run)
