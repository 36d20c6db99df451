"""``kubelet-companion descheduler plan``: the whole cycle on a snapshot file, no cluster.

What a newcomer runs first: a ``kubectl get nodes,pods,pdb,namespaces,priorityclasses -A -o
json`` dump (and, optionally, ``kubectl get nodereports -o json``) and the policy they run
give the plan the live loop would make on that state (``--dry-run``'s cycle, PDBs applied as
the API server would), plus what a dry run cannot say: where each evicted pod would most
likely land (``placement``) and how the nodes' requests look before and after.

Every problem with the input (the policy, either file) is reported at once, each with its
file and path, as a ``ConfigError``: exit 2, before anything is planned.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TextIO, TypeVar

from agent.config.errors import ConfigError, FieldError
from agent.descheduler.cycle import CycleOptions, run_cycle
from agent.descheduler.model import ClusterSnapshot
from agent.descheduler.placement import PlacementResult, place, with_destinations
from agent.descheduler.plan import Plan
from agent.descheduler.policy import load_policy
from agent.descheduler.render import render_json, render_plan_table
from agent.descheduler.snapshotfile import load_snapshot
from agent.telemetry.logs import configure_logging

T = TypeVar("T")


def _collect(errors: list[FieldError], load: Callable[[], T]) -> T | None:
    """``load()``, or ``None`` with its errors added (each prefixed with its file)."""
    try:
        return load()
    except ConfigError as error:
        errors += [
            FieldError(f"{error.source}: {each.path}" if each.path else error.source, each.reason)
            for each in error.errors
        ]
        return None


def plan_snapshot(snapshot: ClusterSnapshot, plan: Plan) -> tuple[Plan, PlacementResult]:
    """The plan with destinations, and the placements behind them."""
    placed = place(snapshot, plan.evictions)
    return with_destinations(plan, placed), placed


def run(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    errors: list[FieldError] = []
    policy = _collect(errors, lambda: load_policy(args.policy_config_file))
    loaded = _collect(
        errors,
        lambda: load_snapshot(args.snapshot, now=time.time(), node_reports=args.node_reports),
    )
    if errors or policy is None or loaded is None:
        raise ConfigError("descheduler plan input", errors)
    snapshot, ignored = loaded
    # stdout carries the plan; the cycle's warnings go to stderr.
    configure_logging(level="warning", component="descheduler", stream=sys.stderr)
    if ignored:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(ignored.items()))
        sys.stderr.write(f"kubelet-companion descheduler plan: ignored {kinds}\n")
    plan, placed = plan_snapshot(snapshot, run_cycle(policy, snapshot, CycleOptions()))
    stream = out or sys.stdout
    stream.write(render_json(plan) if args.output == "json" else render_plan_table(plan, placed))
    stream.flush()
    return 0
