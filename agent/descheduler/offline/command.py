"""``kubelet-companion descheduler plan``: the whole cycle on a snapshot file, no cluster.

What a newcomer runs first: a ``kubectl get nodes,pods,pdb,namespaces,priorityclasses,
deployments,replicasets,statefulsets -A -o json`` dump (and, optionally, ``kubectl get
nodereports -o json``) and the policy they run give the plan the live loop would make on that
state (``--dry-run``'s cycle, PDBs and implicit budgets applied as the live loop would; a
dump without the workloads says which implicit budgets counted the pods seen instead), plus
what a dry run cannot say: where each evicted pod would most likely land (``placement``, as
the default kube-scheduler, or the cluster's own profile from ``--scheduler-config``) and how
the nodes' requests look before and after.

Every problem with the input (the policy, either file, a ``priorityThreshold.name`` no
PriorityClass of the snapshot has, a metrics source the policy reads that ``--usage``
does not hold) is reported at once, each with its file and path, as a
``ConfigError``: exit 2, before anything is planned. NodeReports the descheduler does not
believe are named on stderr, one line each, and their nodes fall back to requests, as live. A
plugin that fails makes no plan at all: its reason on stderr, exit 1 (a plan missing a
plugin's part would be a wrong plan with exit 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO, TypeVar

from agent.config.booleans import parse_bool
from agent.config.errors import ConfigError, FieldError
from agent.descheduler.cache.snapshotfile import DEFAULT_MAX_BYTES, load_snapshot
from agent.descheduler.cache.usagefile import load_usage, missing
from agent.descheduler.core.cycle import CycleOptions, run_cycle
from agent.descheduler.core.placement.profile import DEFAULT_PROFILE, SchedulerProfile
from agent.descheduler.core.placement.replacements import place, with_destinations
from agent.descheduler.model.cluster import ClusterSnapshot
from agent.descheduler.offline.schedulerconfig import load_scheduler_config
from agent.descheduler.options import DeschedulerOptions
from agent.descheduler.plan.destinations import PlacementResult
from agent.descheduler.plan.render import render_json, render_plan_table
from agent.descheduler.plan.shape import Plan
from agent.descheduler.policyfile import load_policy
from agent.kubesemantics.timestamps import parse_rfc3339
from agent.node.atomicwrite import write_atomic
from agent.runtime.collector import collector_paused
from agent.telemetry.logs import configure_logging
from agent.terminaltext import render_lines

T = TypeVar("T")
EXIT_FAILURE = 1


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


def plan_snapshot(
    snapshot: ClusterSnapshot, plan: Plan, profile: SchedulerProfile = DEFAULT_PROFILE
) -> tuple[Plan, PlacementResult]:
    """The plan with destinations (as ``profile`` scores), and the placements behind them."""
    placed = place(snapshot, plan.evictions, profile=profile, taints=plan.taints)
    return with_destinations(plan, placed), placed


def _captured_at(value: str | None, errors: list[FieldError]) -> float | None:
    if value is None:
        return None
    try:
        return parse_rfc3339(value)
    except (ValueError, OverflowError):
        errors.append(FieldError("--captured-at", f"not an RFC 3339 time: {value!r}"))
        return None


def _max_bytes(value: int | None, errors: list[FieldError]) -> int:
    """``--max-snapshot-bytes``: its default when not given; 0 or less is refused (a limit
    of 0 is no default and no "unlimited": the flag's help and docs/commands.md say so)."""
    if value is None:
        return DEFAULT_MAX_BYTES
    if value < 1:
        reason = f"must be at least 1 byte, not {value} (leave it out for the default, 8 GiB)"
        errors.append(FieldError("--max-snapshot-bytes", reason))
        return 0
    return value


def _implicit_budgets(value: str | None, errors: list[FieldError]) -> bool:
    """``--implicit-rollout-budgets`` as the live run reads it (the same bound flag)."""
    default = DeschedulerOptions().implicit_rollout_budgets
    if value is None:
        return default
    try:
        return parse_bool(value)
    except ValueError as error:
        errors.append(FieldError("--implicit-rollout-budgets", str(error)))
        return default


def _say(stream: TextIO, lines: Iterable[str]) -> None:
    stream.write(render_lines(f"kubelet-companion descheduler plan: {line}" for line in lines))


def run(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    errors: list[FieldError] = []
    policy = _collect(errors, lambda: load_policy(args.policy_config_file))
    scheduler_config = getattr(args, "scheduler_config", None)
    profile = (
        _collect(errors, lambda: load_scheduler_config(scheduler_config))
        if scheduler_config
        else DEFAULT_PROFILE
    )
    captured_at = _captured_at(getattr(args, "captured_at", None), errors)
    implicit = _implicit_budgets(getattr(args, "implicit_rollout_budgets", None), errors)
    max_bytes = _max_bytes(getattr(args, "max_snapshot_bytes", None), errors)
    loaded = (
        _collect(
            errors,
            lambda: load_snapshot(
                args.snapshot,
                now=time.time(),
                node_reports=args.node_reports,
                captured_at=captured_at,
                max_bytes=max_bytes,
            ),
        )
        if max_bytes
        else None
    )
    usage_path = getattr(args, "usage", None)
    usage = _collect(errors, lambda: load_usage(usage_path)) if usage_path else None
    if policy is not None and loaded is not None:
        classes = loaded.snapshot.priority_classes
        errors += [
            FieldError(f"{args.policy_config_file}: {each.path}", each.reason)
            for each in policy.unknown_priority_classes(classes)
        ]
    if policy is not None and (usage is not None or not usage_path):
        errors += missing(usage, policy.prometheus_queries, policy.reads_kubernetes_metrics)
    if errors or policy is None or loaded is None or profile is None:
        raise ConfigError("descheduler plan input", errors)
    snapshot = loaded.snapshot
    if usage is not None:
        snapshot = dataclasses.replace(
            snapshot, prometheus=usage.prometheus, kubernetes_metrics=usage.kubernetes_metrics
        )
    # stdout carries the plan; the cycle's warnings go to stderr.
    configure_logging(level="warning", component="descheduler", stream=sys.stderr)
    if loaded.ignored:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(loaded.ignored.items()))
        _say(sys.stderr, [f"ignored {kinds}"])
    _say(
        sys.stderr,
        (
            f"NodeReport {name} not believed ({each.reason}): {each.detail}; its node falls "
            "back to requests"
            for name, each in sorted(loaded.distrusted.items())
        ),
    )
    # This process owns the interpreter: its cyclic garbage collector is paused for the cycle
    # (``runtime.collector``: the cycle's short-lived containers hold no cycles).
    with collector_paused():
        cycle = run_cycle(policy, snapshot, CycleOptions(implicit_budgets=implicit))
    if cycle.errors:
        # A plan missing a plugin's part is not the plan: say why, print none, exit 1.
        _say(sys.stderr, (f"failed: {error}" for error in cycle.errors))
        return EXIT_FAILURE
    if fallbacks := cycle.fallbacks:
        named = ", ".join(fallbacks[:5]) + (
            f" and {len(fallbacks) - 5} more" if len(fallbacks) > 5 else ""
        )
        _say(
            sys.stderr,
            [
                f"implicit budgets of {len(fallbacks)} workloads not in the snapshot ({named}) "
                "count the pods seen as their replicas, with their kind's default share; "
                "add deployments,replicasets,statefulsets to the kubectl get"
            ],
        )
    plan, placed = plan_snapshot(snapshot, cycle, profile)
    text = render_json(plan) if args.output == "json" else render_plan_table(plan, placed)
    target = getattr(args, "out", None)
    if target:
        write_atomic(Path(target), text.encode())
        return 0
    stream = out or sys.stdout
    stream.write(text)
    stream.flush()
    return 0
