"""The ``descheduler`` process: caches, cycles, evictions, leader election, telemetry.

Wiring only: this module builds the parts and hands them to the supervisor. A cycle is
``runner.Descheduler.cycle`` (plan on a snapshot of the caches, then print or carry out);
when cycles run is ``loop.CycleLoop``; which cache events start one early is
``triggerfeeds``; every decision is the pure cycle's (``core.cycle.run_cycle``).

A plan's taints (CriticalAddonRescue, NodeShutdownRecovery, HighNodeUtilization's emptying
taints) are recorded on the Lease and then applied before any of its evictions is sent
(``recordedtaints``, ``taintactions``); rescue taints are removed when their add-on is bound
or their time is up, emptying taints when the replacements are bound (``emptying``), both
checked between cycles; those an earlier run or leader left in flight are taken over, as the
record names them, at the first cycle this process leads (``leftovers``).

Modes, as upstream's flags mean them:
- ``--descheduling-interval 0`` (the default): one cycle, then exit (Job, CronJob);
- a positive interval: a cycle every interval (Deployment);
- ``--leader-elect``: campaign for the Lease ``descheduler`` (in
  ``--leader-elect-resource-namespace``, ``kube-system`` by default); every replica keeps
  its caches warm, only the leader plans and evicts, and it stops admitting evictions as
  soon as it is no longer sure to lead. The churn guard's memory lives on that Lease
  (``agent.kube.evictionmemory``), so it survives restarts and leader changes. Without
  leader election, a policy that sets ``cooldownSeconds`` keeps it on the same Lease's
  annotation with guarded writes, so a Job or CronJob remembers across runs. The record of
  our taints in flight lives on that Lease in every mode, written the same two ways
  (``agent.kube.leaseannotations``).
- ``--event-driven-cycles`` (ours): cache events may start a cycle before the interval
  (``triggers``), at most one per ``--min-cycle-spacing``; with interval 0 only they do. A
  one-shot run that added a rescue or emptying taint waits for it to be removed before it
  exits.

Exit codes: 0 done, 1 runtime failure (no cluster, caches never synced), 2 bad flags or
policy (raised as ``ConfigError`` before anything connects).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import TextIO

import structlog
from prometheus_client import CollectorRegistry

from agent.clock import Clock, SystemClock
from agent.descheduler.cache.state import ClusterState, UsageSource, projections
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.live.budgetwatch import BudgetWatch
from agent.descheduler.live.evictor import EvictionResult, LiveEvictor, ResultListener
from agent.descheduler.live.loop import CycleLoop
from agent.descheduler.live.metrics import DeschedulerMetrics, DroppedEvents, SkippedObjects
from agent.descheduler.live.metricscollector import MetricsCollector
from agent.descheduler.live.options import RunOptions
from agent.descheduler.live.recordedtaints import RecordedTaints
from agent.descheduler.live.reporttrust import NodeReportTrustMetrics, ReportTrust
from agent.descheduler.live.runner import Descheduler
from agent.descheduler.live.taintactions import RescueTracker, TaintActions
from agent.descheduler.live.taintmarks import UnrecordedMarks
from agent.descheduler.live.triggerfeeds import watch_triggers
from agent.descheduler.live.triggers import CycleSchedule
from agent.descheduler.live.usagefeed import UsageFeed, prometheus_client
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.events import EventBroadcaster, EventRecorder, ObjectRef
from agent.kube.evictionmemory import (
    EvictionsMemory,
    LeaseAnnotationMemory,
    RecentEvictionsMemory,
)
from agent.kube.leaderelection import LeaderElector
from agent.kube.lease import KubeLeaseApi
from agent.kube.leaseannotations import AnnotationStore, LeaderAnnotations, LeaseAnnotations
from agent.kube.metricsapi import MetricsApi
from agent.kube.nodereports import NodeReportCache
from agent.kube.ownedtaints import OwnedTaints
from agent.kube.ratelimit import TokenBucket
from agent.runtime.supervisor import STAGE_CONTROLLER, STAGE_WATCH, RootTask, Supervisor
from agent.runtime.watches import watch_task
from agent.telemetry.health import Health
from agent.telemetry.http import TelemetryServer
from agent.telemetry.metrics import new_registry

COMPONENT = "descheduler"
CHURN_MEMORY_SECONDS = 24 * 3600.0
"""How long the Lease remembers an owner's last eviction (longer than any sane cooldown)."""
EVENT_DRAIN_SECONDS = 5.0
"""How long a stopping process waits for its queued Events to be posted."""

_log = structlog.get_logger(subsystem="descheduler")


def event_subject(namespace: str, lease: str) -> ObjectRef:
    """This replica's Pod (``POD_NAME``/``POD_NAMESPACE`` from the downward API), else the
    leader Lease: the object the cycle's own Warning Events are posted on."""
    pod, pod_namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
    if pod and pod_namespace:
        return ObjectRef(kind="Pod", name=pod, namespace=pod_namespace)
    return ObjectRef(
        kind="Lease", name=lease, namespace=namespace, api_version="coordination.k8s.io/v1"
    )


def _on_result(metrics: DeschedulerMetrics) -> ResultListener:
    def count(result: EvictionResult) -> None:
        eviction = result.eviction
        metrics.evicted(
            result.result,
            strategy=eviction.plugin,
            profile=eviction.profile,
            namespace=eviction.namespace,
            node=eviction.node,
        )

    return count


def _usage_feed(
    policy: DeschedulerPolicy,
    options: RunOptions,
    api: KubeApi,
    clock: Clock,
    metrics: DeschedulerMetrics,
) -> tuple[UsageFeed | None, MetricsCollector | None]:
    """What reads the policy's metrics sources before each cycle (``None`` when its
    plugins read none), and metrics.k8s.io's collector when they read that."""
    queries, kubernetes = policy.prometheus_queries, policy.reads_kubernetes_metrics
    if not queries and not kubernetes:
        return None, None
    provider = policy.prometheus
    client = (
        prometheus_client(provider, options.prometheus, api)
        if queries and provider is not None
        else None
    )
    metrics_api = MetricsApi(api) if kubernetes else None
    collector = (
        MetricsCollector(metrics_api, clock, metrics.usage_source_errors)
        if metrics_api is not None
        else None
    )
    feed = UsageFeed(
        policy,
        errors=metrics.usage_source_errors,
        prometheus=client,
        collector=collector,
        metrics_api=metrics_api,
    )
    return feed, collector


async def run_descheduler(  # noqa: PLR0912, PLR0915 - the one place that wires the process
    policy: DeschedulerPolicy,
    options: RunOptions,
    api: KubeApi,
    *,
    out: TextIO | None = None,
    clock: Clock | None = None,
    usage: UsageSource | None = None,
    stop: asyncio.Event | None = None,
    install_signal_handlers: bool = True,
    registry: CollectorRegistry | None = None,
) -> int:
    """Run until the one-shot cycle is done, or until ``stop`` / SIGTERM; return the exit code.

    ``usage`` replaces the agents' NodeReports (watched by default) as the source of real
    usage and of which nodes are no room (shutting down, gated, agent stopped).
    """
    clock = clock or SystemClock()
    stop = stop or asyncio.Event()
    health = Health()
    registry = registry or new_registry(COMPONENT)
    metrics = DeschedulerMetrics(registry)
    server = TelemetryServer(options.metrics_bind_address, registry, health)
    server.start()
    host, port = server.address
    _log.info("serving metrics", address=f"{host}:{port}")
    kube = AsyncKube(api, workers=max(16, options.concurrency * 2))
    limiter = TokenBucket(options.qps, options.burst, monotonic=clock.monotonic, sleep=clock.sleep)
    lease_api = KubeLeaseApi(kube, options.lease_namespace, options.lease_name)
    elector: LeaderElector | None = None
    memory: EvictionsMemory | None = None
    lease_annotations: AnnotationStore
    if options.leader_elect:
        elector = LeaderElector(
            lease_api, clock=clock, identity=options.identity, timing=options.election
        )
        memory = RecentEvictionsMemory(elector, clock=clock, max_age=CHURN_MEMORY_SECONDS)
        lease_annotations = LeaderAnnotations(elector)
    else:
        # The same Lease, holderless, written with guarded read-change-writes: a Job or
        # CronJob keeps its memory and its taint record there across runs.
        lease_annotations = LeaseAnnotations(lease_api)
        if policy.uses_cooldown:
            memory = LeaseAnnotationMemory(lease_api, clock=clock, max_age=CHURN_MEMORY_SECONDS)
    # Events spend tokens of their own (client-go's broadcaster has its own client too):
    # a Descheduled Event never waits for, nor takes, an eviction's token.
    event_limiter = TokenBucket(
        options.qps, options.burst, monotonic=clock.monotonic, sleep=clock.sleep
    )
    events = EventBroadcaster(
        EventRecorder(kube, component=COMPONENT, host=elector.identity if elector else COMPONENT),
        acquire=event_limiter.acquire,
    )
    evictor = LiveEvictor(
        kube,
        events,
        limiter=limiter,
        concurrency=options.concurrency,
        grace_period_seconds=policy.grace_period_seconds,
        on_result=_on_result(metrics),
        may_continue=(lambda: elector.is_leader) if elector is not None else None,
        failure_events=policy.eviction_failure_event_notification,
    )
    reports: NodeReportCache | None = None
    trust: ReportTrust | None = None
    if usage is None:
        reports = NodeReportCache(api, monotonic=clock.monotonic)
        trust = ReportTrust(reports, clock)
        usage = trust.usage
    state = ClusterState(
        api,
        projections(with_status=policy.reads_pod_status),
        usage=usage,
        decoding=options.decoding,
        workloads=options.implicit_budgets,
    )
    budgets = BudgetWatch(
        state.disruption_budgets.get,
        clock,
        # ``items`` reads the store when asked: a relist replaces the store's dict.
        pods=state.pods.items if options.implicit_budgets else None,
    )
    state.disruption_budgets.subscribe(budgets.on_event)
    if budgets.rollouts is not None:
        state.pods.subscribe(budgets.rollouts.on_pod_event)
    registry.register(DroppedEvents(lambda: events.dropped))
    registry.register(
        SkippedObjects(
            lambda: {reflector.name: reflector.skipped for reflector in state.reflectors}
        )
    )
    if trust is not None:
        judging = trust
        registry.register(
            NodeReportTrustMetrics(lambda: judging.verdicts(dict(state.nodes.store)), clock.now)
        )
    recorded = RecordedTaints(OwnedTaints(kube, monotonic=clock.monotonic), lease_annotations)
    taint_actions = TaintActions(
        recorded,
        RescueTracker(recorded, clock.monotonic),
        events,
        rescue_timeout=policy.rescue_taint_timeout,
        lookup=state.pods.get,
        now=clock.now,
    )
    state.pods.subscribe(taint_actions.emptying.on_pod_event)
    feed, collector = _usage_feed(policy, options, api, clock, metrics)
    descheduler = Descheduler(
        policy,
        options,
        state,
        evictor=evictor,
        metrics=metrics,
        clock=clock,
        out=out or sys.stdout,
        elector=elector,
        memory=memory,
        taint_actions=taint_actions,
        events=events,
        subject=event_subject(options.lease_namespace, options.lease_name),
        budgets=budgets,
        marks=UnrecordedMarks(metrics.unrecorded_taint_marks),
        usage_feed=feed,
    )
    metrics.follow_leadership(lambda: descheduler.leading)
    schedule = CycleSchedule(options.interval, options.min_cycle_spacing)
    wake = asyncio.Event()
    if options.event_driven:

        def fire(reason: str, delay: float) -> None:
            _log.info("cycle triggered", reason=reason, delay=round(delay, 1))
            schedule.fire(reason, clock.monotonic() + max(0.0, delay))
            wake.set()

        watch_triggers(policy, state, reports, fire, clock.now)

    loop = CycleLoop(
        descheduler,
        state,
        options,
        clock=clock,
        stop=stop,
        reports=reports,
        elector=elector,
        schedule=schedule,
        wake=wake,
    )

    supervisor = Supervisor(health)
    for reflector in state.reflectors:
        supervisor.add(watch_task(reflector, health))
    if reports is not None:
        # Not a readiness gate and not critical: without the CRD the descheduler still works
        # on requests, and the reflector keeps retrying quietly until the CRD appears.
        supervisor.add(
            RootTask(
                name="watch-nodereports",
                run=reports.reflector.run,
                stage=STAGE_WATCH,
                critical=False,
            )
        )
    if collector is not None:
        # Not critical: a metrics-server that keeps failing fails the cycles that need it
        # (loudly), never the process.
        supervisor.add(
            RootTask(name="metrics-collector", run=collector.run, stage=STAGE_WATCH, critical=False)
        )
    if elector is not None:
        running_elector = elector

        async def release() -> None:
            running_elector.stop()

        supervisor.add(RootTask(name="leader-election", run=elector.run, stop=release))
    # Its graceful stop takes the emptying taints off (a killed run's go at the next start).
    supervisor.add(
        RootTask(
            name="cycles",
            run=loop.run,
            stage=STAGE_CONTROLLER,
            stop=descheduler.release_emptying,
        )
    )

    async def flush_events() -> None:
        # The last cycle's Events go out before the process does (a bounded wait).
        await events.drain(EVENT_DRAIN_SECONDS)

    # Stopped after the cycles (a later stage), so the last cycle's Events are in the queue.
    supervisor.add(RootTask(name="events", run=events.run, stop=flush_events, stage=STAGE_WATCH))
    event_loop = asyncio.get_running_loop()
    if install_signal_handlers:
        for signum in (signal.SIGTERM, signal.SIGINT):
            event_loop.add_signal_handler(signum, stop.set)
    try:
        await supervisor.run(stop)
    finally:
        if install_signal_handlers:
            for signum in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(ValueError, RuntimeError):
                    event_loop.remove_signal_handler(signum)
        kube.close()
        server.close()
    return loop.exit_code
