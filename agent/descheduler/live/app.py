"""The ``descheduler`` process: caches, cycles, evictions, leader election, telemetry.

Wiring only, as ``agent.daemon`` wires the agent: ``build`` makes the parts from the
options (``agent.descheduler.options``) and the seams a test replaces (``Seams``),
``assemble`` hands them to the supervisor as root tasks, ``run_descheduler`` runs them until
the end. A cycle is ``runner.Descheduler.cycle`` (plan on a snapshot of the caches, then
print or carry out); when cycles run is ``loop.CycleLoop``; which cache events start one
early is ``triggerfeeds``; every decision is the pure cycle's (``core.cycle.run_cycle``).

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
import functools
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TextIO

import structlog
from prometheus_client import CollectorRegistry

from agent.clock import Clock, SystemClock
from agent.descheduler.cache.state import ClusterState, UsageSource, projections
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.live.budgetwatch import BudgetWatch
from agent.descheduler.live.evictor import EvictionResult, LiveEvictor
from agent.descheduler.live.loop import CycleLoop
from agent.descheduler.live.metrics import DeschedulerMetrics, DroppedEvents, SkippedObjects
from agent.descheduler.live.metricscollector import MetricsCollector
from agent.descheduler.live.recordedtaints import RecordedTaints
from agent.descheduler.live.reporttrust import NodeReportTrustMetrics, ReportTrust
from agent.descheduler.live.runner import Descheduler
from agent.descheduler.live.taintactions import RescueTracker, TaintActions
from agent.descheduler.live.taintmarks import UnrecordedMarks
from agent.descheduler.live.triggerfeeds import watch_triggers
from agent.descheduler.live.usagefeed import UsageFeed, prometheus_client
from agent.descheduler.options import DeschedulerOptions
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


@dataclass(frozen=True)
class Seams:
    """What the process takes from its surroundings rather than from its options; tests
    and benchmarks give their own."""

    clock: Clock = field(default_factory=SystemClock)
    out: TextIO | None = None
    """Where a dry run prints its plan; ``None``: stdout."""
    usage: UsageSource | None = None
    """Real usage, and which nodes are no room (shutting down, gated, agent stopped);
    ``None``: the agents' NodeReports, watched."""
    registry: CollectorRegistry | None = None
    identity: str | None = None
    """This replica's name on the Lease; ``None``: the host name plus a random suffix."""
    election_jitter: float | None = None
    """Replaces the elector's spread of its tries (a test on a hand-driven clock)."""


async def run_descheduler(
    policy: DeschedulerPolicy,
    options: DeschedulerOptions,
    api: KubeApi,
    seams: Seams | None = None,
    *,
    stop: asyncio.Event | None = None,
    install_signal_handlers: bool = True,
) -> int:
    """Run until the one-shot cycle is done, or until ``stop`` / SIGTERM; return the exit
    code."""
    stop = stop or asyncio.Event()
    process = build(policy, options, api, seams or Seams(), stop)
    supervisor = assemble(process)
    try:
        with _stopped_by_signals(stop, install=install_signal_handlers):
            await supervisor.run(stop)
    finally:
        process.close()
    return process.loop.exit_code


@dataclass(frozen=True)
class Process:
    """One descheduler process, built: what its root tasks run, and what it closes."""

    health: Health
    server: TelemetryServer
    kube: AsyncKube
    state: ClusterState
    reports: NodeReportCache | None
    collector: MetricsCollector | None
    elector: LeaderElector | None
    events: EventBroadcaster
    descheduler: Descheduler
    loop: CycleLoop

    def close(self) -> None:
        self.kube.close()
        self.server.close()


def build(
    policy: DeschedulerPolicy,
    options: DeschedulerOptions,
    api: KubeApi,
    seams: Seams,
    stop: asyncio.Event,
) -> Process:
    """Every part, the telemetry listener first (a slow API server never hides
    ``/healthz``), then the Lease's users, the Events, the caches and the cycle's parts."""
    clock, health = seams.clock, Health()
    registry = seams.registry or new_registry(COMPONENT)
    metrics = DeschedulerMetrics(registry)
    server = _serve(options, registry, health)
    kube = AsyncKube(api, workers=max(16, options.eviction_concurrency * 2))
    lease = _lease(policy, options, kube, seams)
    events = _events(options, kube, clock, lease.elector)
    caches = _caches(policy, options, api, seams)
    _register_collectors(registry, events, caches, clock)
    feed, collector = _usage_feed(policy, options, api, clock, metrics)
    descheduler = Descheduler(
        policy,
        options,
        caches.state,
        evictor=_evictor(
            policy, options, kube, events, metrics=metrics, elector=lease.elector, clock=clock
        ),
        metrics=metrics,
        clock=clock,
        out=seams.out or sys.stdout,
        elector=lease.elector,
        memory=lease.memory,
        taint_actions=_taint_actions(
            policy, kube, lease.annotations, events, state=caches.state, clock=clock
        ),
        events=events,
        subject=event_subject(options.lease_namespace, options.lease_name),
        budgets=caches.budgets,
        marks=UnrecordedMarks(metrics.unrecorded_taint_marks),
        usage_feed=feed,
    )
    metrics.follow_leadership(lambda: descheduler.leading)
    loop = CycleLoop(
        descheduler,
        caches.state,
        options,
        clock=clock,
        stop=stop,
        reports=caches.reports,
        elector=lease.elector,
    )
    if options.event_driven_cycles:
        watch_triggers(policy, caches.state, caches.reports, loop.trigger, clock.now)
    return Process(
        health=health,
        server=server,
        kube=kube,
        state=caches.state,
        reports=caches.reports,
        collector=collector,
        elector=lease.elector,
        events=events,
        descheduler=descheduler,
        loop=loop,
    )


def assemble(process: Process) -> Supervisor:
    """The root tasks: the caches' watches, the election, the cycles, the Events' queue."""
    supervisor = Supervisor(process.health)
    for reflector in process.state.reflectors:
        supervisor.add(watch_task(reflector, process.health))
    if process.reports is not None:
        # Not a readiness gate and not critical: without the CRD the descheduler still works
        # on requests, and the reflector keeps retrying quietly until the CRD appears.
        supervisor.add(
            RootTask(
                name="watch-nodereports",
                run=process.reports.reflector.run,
                stage=STAGE_WATCH,
                critical=False,
            )
        )
    if process.collector is not None:
        # Not critical: a metrics-server that keeps failing fails the cycles that need it
        # (loudly), never the process.
        supervisor.add(
            RootTask(
                name="metrics-collector",
                run=process.collector.run,
                stage=STAGE_WATCH,
                critical=False,
            )
        )
    if process.elector is not None:
        release = functools.partial(_step_down, process.elector)
        supervisor.add(RootTask(name="leader-election", run=process.elector.run, stop=release))
    # Its graceful stop takes the emptying taints off (a killed run's go at the next start).
    supervisor.add(
        RootTask(
            name="cycles",
            run=process.loop.run,
            stage=STAGE_CONTROLLER,
            stop=process.descheduler.release_emptying,
        )
    )
    # Stopped after the cycles (a later stage), so the last cycle's Events are in the queue.
    flush = functools.partial(_flush_events, process.events)
    supervisor.add(RootTask(name="events", run=process.events.run, stop=flush, stage=STAGE_WATCH))
    return supervisor


@contextlib.contextmanager
def _stopped_by_signals(stop: asyncio.Event, *, install: bool) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` meanwhile (when ``install``)."""
    event_loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT) if install else ()
    for signum in signals:
        event_loop.add_signal_handler(signum, stop.set)
    try:
        yield
    finally:
        for signum in signals:
            with contextlib.suppress(ValueError, RuntimeError):
                event_loop.remove_signal_handler(signum)


async def _step_down(elector: LeaderElector) -> None:
    elector.stop()


async def _flush_events(events: EventBroadcaster) -> None:
    # The last cycle's Events go out before the process does (a bounded wait).
    await events.drain(EVENT_DRAIN_SECONDS)


def _serve(
    options: DeschedulerOptions, registry: CollectorRegistry, health: Health
) -> TelemetryServer:
    server = TelemetryServer(options.metrics_bind_address, registry, health)
    server.start()
    host, port = server.address
    _log.info("serving metrics", address=f"{host}:{port}")
    return server


@dataclass(frozen=True)
class _Lease:
    """Who uses the descheduler's Lease: the election, the churn guard's memory, and the
    annotations our taint record is written to."""

    elector: LeaderElector | None
    memory: EvictionsMemory | None
    annotations: AnnotationStore


def _lease(
    policy: DeschedulerPolicy, options: DeschedulerOptions, kube: AsyncKube, seams: Seams
) -> _Lease:
    lease_api = KubeLeaseApi(kube, options.lease_namespace, options.lease_name)
    clock = seams.clock
    if not options.leader_elect:
        # The same Lease, holderless, written with guarded read-change-writes: a Job or
        # CronJob keeps its memory and its taint record there across runs.
        memory = (
            LeaseAnnotationMemory(lease_api, clock=clock, max_age=CHURN_MEMORY_SECONDS)
            if policy.uses_cooldown
            else None
        )
        return _Lease(None, memory, LeaseAnnotations(lease_api))
    timing = options.election()
    if seams.election_jitter is not None:
        timing = replace(timing, jitter=seams.election_jitter)
    elector = LeaderElector(lease_api, clock=clock, identity=seams.identity, timing=timing)
    return _Lease(
        elector,
        RecentEvictionsMemory(elector, clock=clock, max_age=CHURN_MEMORY_SECONDS),
        LeaderAnnotations(elector),
    )


def _rate_limiter(options: DeschedulerOptions, clock: Clock) -> TokenBucket:
    return TokenBucket(
        options.client_connection_qps,
        options.client_connection_burst,
        monotonic=clock.monotonic,
        sleep=clock.sleep,
    )


def _events(
    options: DeschedulerOptions, kube: AsyncKube, clock: Clock, elector: LeaderElector | None
) -> EventBroadcaster:
    # Events spend tokens of their own (client-go's broadcaster has its own client too):
    # a Descheduled Event never waits for, nor takes, an eviction's token.
    host = elector.identity if elector is not None else COMPONENT
    return EventBroadcaster(
        EventRecorder(kube, component=COMPONENT, host=host),
        acquire=_rate_limiter(options, clock).acquire,
    )


def _evictor(
    policy: DeschedulerPolicy,
    options: DeschedulerOptions,
    kube: AsyncKube,
    events: EventBroadcaster,
    *,
    metrics: DeschedulerMetrics,
    elector: LeaderElector | None,
    clock: Clock,
) -> LiveEvictor:
    return LiveEvictor(
        kube,
        events,
        limiter=_rate_limiter(options, clock),
        concurrency=options.eviction_concurrency,
        grace_period_seconds=policy.grace_period_seconds,
        on_result=functools.partial(_count_result, metrics),
        may_continue=(lambda: elector.is_leader) if elector is not None else None,
        failure_events=policy.eviction_failure_event_notification,
    )


def _count_result(metrics: DeschedulerMetrics, result: EvictionResult) -> None:
    eviction = result.eviction
    metrics.evicted(
        result.result,
        strategy=eviction.plugin,
        profile=eviction.profile,
        namespace=eviction.namespace,
        node=eviction.node,
    )


@dataclass(frozen=True)
class _Caches:
    state: ClusterState
    budgets: BudgetWatch
    reports: NodeReportCache | None
    """The agents' NodeReports, watched unless the seams replace the usage source."""
    trust: ReportTrust | None


def _caches(
    policy: DeschedulerPolicy, options: DeschedulerOptions, api: KubeApi, seams: Seams
) -> _Caches:
    reports, trust, usage = None, None, seams.usage
    if usage is None:
        reports = NodeReportCache(api, monotonic=seams.clock.monotonic)
        trust = ReportTrust(reports, seams.clock)
        usage = trust.usage
    implicit = options.implicit_rollout_budgets
    state = ClusterState(
        api, projections(with_status=policy.reads_pod_status), usage=usage, workloads=implicit
    )
    # ``items`` reads the store when asked: a relist replaces the store's dict.
    budgets = BudgetWatch(
        state.disruption_budgets.get, seams.clock, pods=state.pods.items if implicit else None
    )
    state.disruption_budgets.subscribe(budgets.on_event)
    if budgets.rollouts is not None:
        state.pods.subscribe(budgets.rollouts.on_pod_event)
    return _Caches(state, budgets, reports, trust)


def _register_collectors(
    registry: CollectorRegistry, events: EventBroadcaster, caches: _Caches, clock: Clock
) -> None:
    state, trust = caches.state, caches.trust
    registry.register(DroppedEvents(lambda: events.dropped))
    registry.register(
        SkippedObjects(
            lambda: {reflector.name: reflector.skipped for reflector in state.reflectors}
        )
    )
    if trust is not None:
        registry.register(
            NodeReportTrustMetrics(lambda: trust.verdicts(dict(state.nodes.store)), clock.now)
        )


def _taint_actions(
    policy: DeschedulerPolicy,
    kube: AsyncKube,
    annotations: AnnotationStore,
    events: EventBroadcaster,
    *,
    state: ClusterState,
    clock: Clock,
) -> TaintActions:
    recorded = RecordedTaints(OwnedTaints(kube, monotonic=clock.monotonic), annotations)
    actions = TaintActions(
        recorded,
        RescueTracker(recorded, clock.monotonic),
        events,
        rescue_timeout=policy.rescue_taint_timeout,
        lookup=state.pods.get,
        now=clock.now,
    )
    state.pods.subscribe(actions.emptying.on_pod_event)
    return actions


def event_subject(namespace: str, lease: str) -> ObjectRef:
    """This replica's Pod (``POD_NAME``/``POD_NAMESPACE`` from the downward API), else the
    leader Lease: the object the cycle's own Warning Events are posted on."""
    pod, pod_namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
    if pod and pod_namespace:
        return ObjectRef(kind="Pod", name=pod, namespace=pod_namespace)
    return ObjectRef(
        kind="Lease", name=lease, namespace=namespace, api_version="coordination.k8s.io/v1"
    )


def _usage_feed(
    policy: DeschedulerPolicy,
    options: DeschedulerOptions,
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
    client = prometheus_client(provider, options, api) if queries and provider is not None else None
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
