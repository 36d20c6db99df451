"""The ``descheduler`` process: caches, cycles, evictions, leader election, telemetry.

Wiring only; every decision is the pure cycle's (``cycle.run_cycle``). The flow per cycle:
take a snapshot of the caches, plan on a worker thread (the snapshot is immutable, so the
caches keep following their watches meanwhile), then either print the plan (``--dry-run``)
or send its allowed evictions through the live evictor.

A plan's taints (CriticalAddonRescue, NodeShutdownRecovery) are applied before any of its
evictions is sent (``taintactions``); rescue taints are removed when their add-on is bound or
their time is up, checked between cycles, and those an earlier run left at the first cycle
this process leads.

Modes, as upstream's flags mean them:
- ``--descheduling-interval 0`` (the default): one cycle, then exit (Job, CronJob);
- a positive interval: a cycle every interval (Deployment);
- ``--leader-elect``: campaign for the Lease ``descheduler`` (in
  ``--leader-elect-resource-namespace``, ``kube-system`` by default); every replica keeps
  its caches warm, only the leader plans and evicts, and it stops admitting evictions as
  soon as it is no longer sure to lead. The churn guard's memory lives on that Lease
  (``agent.kube.evictionmemory``), so it survives restarts and leader changes. Without
  leader election, a policy that sets ``cooldownSeconds`` keeps it on the same Lease's
  annotation with guarded writes, so a Job or CronJob remembers across runs.
- ``--event-driven-cycles`` (ours): cache events may start a cycle before the interval
  (``triggers``), at most one per ``--min-cycle-spacing``; with interval 0 only they do. A
  one-shot run that added a rescue taint waits for it to be removed before it exits.

Exit codes: 0 done, 1 runtime failure (no cluster, caches never synced), 2 bad flags or
policy (raised as ``ConfigError`` before anything connects).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TextIO, TypeVar

import structlog
from prometheus_client import CollectorRegistry

from agent.clock import Clock, SystemClock, sleep_or_set
from agent.descheduler import projection
from agent.descheduler.cycle import CycleOptions, run_cycle
from agent.descheduler.evictions.budgetwatch import BudgetWatch
from agent.descheduler.evictions.live import (
    DEFAULT_CONCURRENCY,
    EvictionResult,
    LiveEvictor,
    ResultListener,
)
from agent.descheduler.framework.types import BALANCE
from agent.descheduler.metrics import (
    RESULT_BLOCKED_BY_PDB,
    DeschedulerMetrics,
    DroppedEvents,
    SkippedObjects,
)
from agent.descheduler.model import ClusterSnapshot, PodInfo
from agent.descheduler.plan import Plan, PlannedEviction
from agent.descheduler.plugins.criticaladdonrescue import NAME as RESCUE
from agent.descheduler.plugins.criticaladdonrescue import CriticalAddonRescueArgs, is_critical
from agent.descheduler.plugins.nodeutilization.lownodeutilization import LowNodeUtilizationArgs
from agent.descheduler.policy import DeschedulerPolicy
from agent.descheduler.projection import UNSCHEDULABLE_SINCE
from agent.descheduler.render import render_json, render_table
from agent.descheduler.reporttrust import NodeReportTrustMetrics, ReportTrust
from agent.descheduler.state import ClusterState, Decoding, Projections, UsageSource
from agent.descheduler.taintactions import RescueTracker, TaintActions
from agent.descheduler.triggers import (
    DEFAULT_MIN_SPACING,
    AddonWatch,
    CycleSchedule,
    NodeReadyWatch,
    UtilizationWatch,
)
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.errors import KubeError, LeadershipLost, NotFound
from agent.kube.events import EventBroadcaster, EventRecorder, EventSink, ObjectRef
from agent.kube.evictionmemory import (
    EvictionsMemory,
    LeaseAnnotationMemory,
    RecentEvictionsMemory,
)
from agent.kube.leaderelection import ElectionTiming, LeaderElector
from agent.kube.lease import KubeLeaseApi
from agent.kube.nodereports import NodeReportCache, NodeUsageReport
from agent.kube.ownedtaints import OwnedTaints
from agent.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket
from agent.kube.taintownership import RESCUE_ANNOTATION
from agent.runtime.supervisor import STAGE_CONTROLLER, STAGE_WATCH, RootTask, Supervisor
from agent.runtime.watches import watch_task
from agent.telemetry.health import Health
from agent.telemetry.http import TelemetryServer
from agent.telemetry.metrics import new_registry

A = TypeVar("A")
COMPONENT = "descheduler"
LEASE_NAMESPACE = "kube-system"
LEASE_NAME = "descheduler"
CYCLE_FAILED = "DeschedulingFailed"
"""The reason of the Warning Event a cycle posts when a plugin or a profile failed."""
CHURN_MEMORY_SECONDS = 24 * 3600.0
"""How long the Lease remembers an owner's last eviction (longer than any sane cooldown)."""
LEFTOVER_SYNC_SECONDS = 5.0
"""How long the first cycle waits for the node cache to show leftover rescue taints gone."""
RESCUE_POLL_SECONDS = 1.0
"""How often an in-place rescue taint is checked against its add-on (in memory, no calls)."""
EVENT_DRAIN_SECONDS = 5.0
"""How long a stopping process waits for its queued Events to be posted."""
DEFAULT_HELD_EVICTION_TIMEOUT = 60.0
"""How long a cycle waits, at most, for budgets to let its held evictions go."""
REPORTS_SYNC_SECONDS = 10.0
"""How long the first cycle waits for the agents' NodeReports; without them (no CRD, no
agents) every node falls back to requests, which the plan records and a metric counts."""

_log = structlog.get_logger(subsystem="descheduler")

PROJECTIONS = Projections(
    pod=projection.project_pod,
    node=projection.project_node,
    disruption_budget=projection.project_disruption_budget,
    claim=projection.project_claim,
)
"""Every field any plugin reads."""


def projections_for(policy: DeschedulerPolicy) -> Projections:
    """``PROJECTIONS``, without the pod-state details when no enabled plugin reads them.

    The policy is read once, at start, so the caches' projection is fixed for the process.
    """
    if policy.reads_pod_status:
        return PROJECTIONS
    return dataclasses.replace(
        PROJECTIONS,
        pod=functools.partial(projection.project_pod, with_status=False),
        pod_status=False,
    )


@dataclass(frozen=True)
class RunOptions:
    """Flags and our config file, resolved (flags win)."""

    interval: float = 0.0
    dry_run: bool = False
    output: Literal["table", "json"] = "table"
    leader_elect: bool = False
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    concurrency: int = DEFAULT_CONCURRENCY
    metrics_bind_address: str = "127.0.0.1:9478"
    sync_timeout: float = 600.0
    """A cache that has not listed by then fails the run (exit 1)."""
    decoding: Decoding = "msgspec"
    election: ElectionTiming = field(default_factory=ElectionTiming)
    lease_namespace: str = LEASE_NAMESPACE
    lease_name: str = LEASE_NAME
    identity: str | None = None
    """This replica's name on the Lease; by default the host name plus a random suffix."""
    event_driven: bool = False
    """Also start a cycle soon after a trigger (``triggers``), spaced ``min_cycle_spacing``."""
    min_cycle_spacing: float = DEFAULT_MIN_SPACING
    held_eviction_timeout: float = DEFAULT_HELD_EVICTION_TIMEOUT
    """How long a cycle holds an eviction a budget refuses, waiting for the budget to allow
    it (never past the next interval)."""

    @property
    def hold_seconds(self) -> float:
        """The cycle's hold: the timeout, and never longer than the interval."""
        if self.interval > 0:
            return min(self.held_eviction_timeout, self.interval)
        return self.held_eviction_timeout


class Descheduler:
    """One process's cycles: plan from the caches, then print or evict."""

    def __init__(
        self,
        policy: DeschedulerPolicy,
        options: RunOptions,
        state: ClusterState,
        *,
        evictor: LiveEvictor,
        metrics: DeschedulerMetrics,
        clock: Clock,
        out: TextIO,
        elector: LeaderElector | None = None,
        memory: EvictionsMemory | None = None,
        taint_actions: TaintActions | None = None,
        events: EventSink | None = None,
        subject: ObjectRef | None = None,
        budgets: BudgetWatch | None = None,
    ) -> None:
        self.policy = policy
        self.options = options
        self.state = state
        self.evictor = evictor
        self.metrics = metrics
        self.clock = clock
        self.out = out
        self.elector = elector
        self.memory = memory
        self.owner_evictions: dict[str, float] = {}
        """The churn guard's memory when it is not kept on a Lease."""
        self.last_plan: Plan | None = None
        self.last_results: list[EvictionResult] = []
        self.taint_actions = taint_actions
        """Applies the plan's taints (rescue, out-of-service); ``None``: no taints at all."""
        self._leftovers_checked = False
        self.events = events
        self.subject = subject
        self.budgets = budgets
        """The budgets' watch, which held evictions wait on; ``None``: they are not held."""
        """What the cycle's own Warning Events are about: this replica's Pod, else its Lease."""

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader

    async def cycle(self) -> Plan | None:
        """Run one cycle; ``None`` when this replica is a follower and did nothing."""
        if not self.options.dry_run and not self.leading:
            self.metrics.cycles.labels("follower").inc()
            return None
        started = self.clock.monotonic()
        if not self.options.dry_run and not self._leftovers_checked:
            await self._remove_leftover_rescues()
        owner_evictions = await self._recall()
        snapshot = self.state.snapshot(self.clock.now())
        options = CycleOptions(owner_evictions=owner_evictions, monotonic=self.clock.monotonic)
        plan = await asyncio.to_thread(run_cycle, self.policy, snapshot, options)
        self._count_fallbacks(plan)
        for run in plan.durations:
            self.metrics.strategy_duration.labels(run["plugin"], run["profile"]).observe(
                float(run["seconds"])
            )
        if self.options.dry_run:
            self.out.write(
                render_json(plan) if self.options.output == "json" else render_table(plan)
            )
            self.out.flush()
            self.metrics.cycles.labels("dry-run").inc()
        else:
            for refused in plan.limit_refusals:
                # Upstream counts a limit's refusal with the limit's text as the result.
                self.metrics.evicted(
                    refused["result"],
                    strategy=refused["strategy"],
                    profile=refused["profile"],
                    namespace=refused["namespace"],
                    node=refused["node"],
                )
            self.last_results = await self._execute(plan)
            await self._remember(snapshot, owner_evictions, self.last_results)
            self.metrics.cycles.labels(_outcome(plan)).inc()
        if plan.errors:
            await self._report_failures(plan)
        self.metrics.loop_duration.observe(self.clock.monotonic() - started)
        self.last_plan = plan
        return plan

    async def _report_failures(self, plan: Plan) -> None:
        """A plugin or profile that failed: an error line and a Warning Event each."""
        for error in plan.errors:
            _log.error("descheduling cycle incomplete", error=error)
            if self.events is not None and self.subject is not None:
                await self.events.emit(self.subject, "Warning", CYCLE_FAILED, error)

    async def _execute(self, plan: Plan) -> list[EvictionResult]:
        """Taints first (a rescue's node is tainted before its pods go), then evictions; the
        ones a budget holds go as it allows, until the hold ends."""
        actions = self.taint_actions if plan.taints else None
        failed = await actions.apply(plan.taints) if actions is not None else set()
        allowed = actions.sendable(plan.allowed, failed) if actions is not None else plan.allowed
        results = await self.evictor.evict_all(
            allowed,
            held=[eviction for eviction in plan.evictions if eviction.blocked_by_pdb],
            budgets=self.budgets,
            hold_until=self.clock.monotonic() + self.options.hold_seconds,
        )
        if actions is not None:
            await actions.report(plan.taints, results, failed)
        return results

    async def _remove_leftover_rescues(self) -> None:
        """Once, as leader: rescue taints an earlier run left; wait for the cache to agree."""
        self._leftovers_checked = True
        actions = self.taint_actions
        if actions is None:
            return
        removed = await actions.tracker.remove_leftovers(list(self.state.nodes.store.values()))
        deadline = self.clock.monotonic() + LEFTOVER_SYNC_SECONDS
        while removed and self.clock.monotonic() < deadline:
            if all(
                RESCUE_ANNOTATION not in getattr(self.state.nodes.get(name), "annotations", {})
                for name in removed
            ):
                break
            await self.clock.sleep(0.05)

    async def settle_rescues(self) -> bool:
        """Remove rescue taints that are done; ``True`` while some are still in place."""
        actions = self.taint_actions
        if actions is None or not actions.tracker.pending:
            return False
        await actions.tracker.settle(self.state.pods.get)
        return actions.tracker.pending

    def _count_fallbacks(self, plan: Plan) -> None:
        fallbacks = [facts for facts in plan.nodes if facts.get("fallback")]
        for facts in fallbacks:
            self.metrics.usage_fallback.labels(str(facts["fallback"])).inc()
        if fallbacks:
            _log.info(
                "usage fell back to requests",
                nodes=len(fallbacks),
                sample=[str(facts.get("node")) for facts in fallbacks[:5]],
            )

    def _count(self, eviction: PlannedEviction, result: str) -> None:
        self.metrics.evicted(
            result,
            strategy=eviction.plugin,
            profile=eviction.profile,
            namespace=eviction.namespace,
            node=eviction.node,
        )

    async def _recall(self) -> dict[str, float]:
        if self.memory is None or not self.leading:
            return dict(self.owner_evictions)
        try:
            return await self.memory.load()
        except KubeError as error:
            _log.warning("churn guard memory not read; using this process's", error=str(error))
            return dict(self.owner_evictions)

    async def _remember(
        self,
        snapshot: ClusterSnapshot,
        before: Mapping[str, float],
        results: list[EvictionResult],
    ) -> None:
        """Owners that lost a pod to us now, added to the memory the next cycle reads."""
        remembered = dict(before)
        for result in results:
            if not result.evicted:
                continue
            eviction = result.eviction
            for pod in snapshot.pods_on(eviction.node):
                if pod.uid == eviction.uid and pod.controller is not None:
                    remembered[pod.controller.uid] = snapshot.now
        self.owner_evictions = remembered
        self.metrics.churn_guard_owners.set(len(remembered))
        if self.memory is not None and remembered != dict(before):
            try:
                await self.memory.save(remembered)
            except (KubeError, LeadershipLost) as error:
                _log.warning("churn guard memory not saved", error=str(error))


def cycle_summary(plan: Plan, results: Sequence[EvictionResult]) -> dict[str, object]:
    """What one cycle did, for its log line: evictions by profile and plugin, what a budget
    still refused, what failed."""
    evicted: dict[str, int] = {}
    for result in results:
        if result.evicted:
            where = f"{result.eviction.profile}/{result.eviction.plugin}"
            evicted[where] = evicted.get(where, 0) + 1
    return {
        "evicted": dict(sorted(evicted.items())),
        "blocked": sum(1 for r in results if r.result == RESULT_BLOCKED_BY_PDB),
        "failed": sum(1 for r in results if not r.evicted and r.result != RESULT_BLOCKED_BY_PDB),
        "plugin_errors": len(plan.errors),
    }


def _log_cycle(
    descheduler: Descheduler,
    seconds: float,
    schedule: CycleSchedule,
    clock: Clock,
    one_shot: bool,
) -> None:
    """One info line per cycle a person reads: what it did, how long it took, what is next."""
    plan = descheduler.last_plan
    if plan is None:
        return
    if descheduler.options.dry_run:
        summary: dict[str, object] = {"planned": plan.summary()["planned"]}
    else:
        summary = cycle_summary(plan, descheduler.last_results)
    due = schedule.next_start()
    _log.info(
        "descheduling cycle done",
        **summary,
        skipped=plan.skipped or None,
        seconds=round(seconds, 2),
        next_cycle_in=None if one_shot or due is None else round(due - clock.monotonic(), 1),
    )


def _outcome(plan: Plan) -> str:
    """The ``cycles`` metric's outcome of a cycle that evicted."""
    if plan.errors:
        return "failed"
    return "skipped" if plan.skipped else "planned"


def event_subject(namespace: str, lease: str) -> ObjectRef:
    """This replica's Pod (``POD_NAME``/``POD_NAMESPACE`` from the downward API), else the
    leader Lease: the object the cycle's own Warning Events are posted on."""
    pod, pod_namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
    if pod and pod_namespace:
        return ObjectRef(kind="Pod", name=pod, namespace=pod_namespace)
    return ObjectRef(
        kind="Lease", name=lease, namespace=namespace, api_version="coordination.k8s.io/v1"
    )


def rescue_timeout(policy: DeschedulerPolicy) -> float:
    """The longest ``taintTimeoutSeconds`` of any CriticalAddonRescue in the policy."""
    timeouts = [
        args.taint_timeout_seconds
        for profile in policy.profiles
        for name, args in profile.args.items()
        if name == RESCUE and isinstance(args, CriticalAddonRescueArgs)
    ]
    return max(timeouts, default=CriticalAddonRescueArgs().taint_timeout_seconds)


def watch_triggers(
    policy: DeschedulerPolicy,
    state: ClusterState,
    reports: NodeReportCache | None,
    fire: Callable[[str, float], None],
    now: Callable[[], float],
) -> None:
    """Feed the caches' events to the trigger detectors (``triggers``)."""
    nodes = NodeReadyWatch(fire)
    state.nodes.subscribe(lambda kind, node: nodes.on_event(kind, node, state.nodes.store))
    rescue_args = _enabled_args(policy, RESCUE, CriticalAddonRescueArgs)
    low = _enabled_args(policy, "LowNodeUtilization", LowNodeUtilizationArgs)
    if rescue_args is not None:
        _watch_addons(state, rescue_args, fire, now)
    if reports is None or low is None or low.use_deviation_thresholds:
        return
    utilization = UtilizationWatch(fire, low.thresholds, low.target_thresholds)
    watched = reports

    def on_report(kind: str, report: NodeUsageReport | None) -> None:
        if kind == "SYNCED":
            for each in watched.all_reports():
                utilization.on_report(kind, each)
        else:
            utilization.on_report(kind, report)

    reports.subscribe_reports(on_report)


def _enabled_args(policy: DeschedulerPolicy, name: str, kind: type[A]) -> A | None:
    """The args of the first profile that enables the Balance plugin ``name``, if any."""
    for profile in policy.profiles:
        args = profile.args.get(name)
        if name in profile.plugins_at(BALANCE) and isinstance(args, kind):
            return args
    return None


def _watch_addons(
    state: ClusterState,
    rescue_args: CriticalAddonRescueArgs,
    fire: Callable[[str, float], None],
    now: Callable[[], float],
) -> None:

    def critical(pod: PodInfo) -> bool:
        if pod.namespace not in rescue_args.system_namespaces:
            return False
        return is_critical(pod, rescue_args.system_namespaces, state.priority_classes.store)

    def delay(pod: PodInfo) -> float:
        since = float(pod.extra.get(UNSCHEDULABLE_SINCE, 0.0))
        return since + rescue_args.unschedulable_seconds - now()

    addons = AddonWatch(fire, critical, delay)
    state.pods.subscribe(addons.on_event)


async def until_next_cycle(
    schedule: CycleSchedule,
    settle: Callable[[], Awaitable[bool]],
    clock: Clock,
    wake: asyncio.Event,
) -> None:
    """Sleep until the schedule says a cycle is due (``wake`` is set by each trigger).

    Meanwhile ``settle`` runs at least every ``RESCUE_POLL_SECONDS`` while it says rescue
    taints are in place (in memory: it calls the API only to remove one).
    """
    while True:
        wake.clear()
        rescuing = await settle()
        now = clock.monotonic()
        due = schedule.next_start()
        if due is not None and now >= due:
            return
        poll = now + RESCUE_POLL_SECONDS if rescuing else None
        deadlines = [t for t in (due, poll) if t is not None]
        await sleep_or_set(clock, min(deadlines) - now if deadlines else None, wake)


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


def uses_cooldown(policy: DeschedulerPolicy) -> bool:
    """Whether any plugin of the policy sets ``cooldownSeconds`` (the churn guard is on)."""
    return any(
        getattr(args, "cooldown_seconds", 0) > 0
        for profile in policy.profiles
        for args in profile.args.values()
    )


async def _reports_listed(reports: NodeReportCache, clock: Clock) -> bool:
    """Wait (bounded) for the first list of NodeReports; ``False`` soon without the CRD."""
    deadline = clock.monotonic() + REPORTS_SYNC_SECONDS
    synced = reports.reflector.synced
    while not synced.is_set():
        remaining = deadline - clock.monotonic()
        if isinstance(reports.reflector.last_error, NotFound) or remaining <= 0:
            return False
        # Checked again every 50 ms for the error, which the watch thread only records.
        await sleep_or_set(clock, min(0.05, remaining), synced)
    return True


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
    elector: LeaderElector | None = None
    memory: EvictionsMemory | None = None
    if options.leader_elect:
        elector = LeaderElector(
            KubeLeaseApi(kube, options.lease_namespace, options.lease_name),
            clock=clock,
            identity=options.identity,
            timing=options.election,
        )
        memory = RecentEvictionsMemory(elector, clock=clock, max_age=CHURN_MEMORY_SECONDS)
    elif uses_cooldown(policy):
        memory = LeaseAnnotationMemory(
            KubeLeaseApi(kube, options.lease_namespace, options.lease_name),
            clock=clock,
            max_age=CHURN_MEMORY_SECONDS,
        )
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
    state = ClusterState(api, projections_for(policy), usage=usage, decoding=options.decoding)
    budgets = BudgetWatch(state.disruption_budgets.get, clock)
    state.disruption_budgets.subscribe(budgets.on_event)
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
    owned_taints = OwnedTaints(kube, monotonic=clock.monotonic)
    taint_actions = TaintActions(
        owned_taints,
        RescueTracker(owned_taints, clock.monotonic),
        events,
        rescue_timeout=rescue_timeout(policy),
        lookup=state.pods.get,
    )
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
    )
    metrics.follow_leadership(lambda: descheduler.leading)
    exit_code = 0
    schedule = CycleSchedule(options.interval, options.min_cycle_spacing)
    wake = asyncio.Event()
    if options.event_driven:

        def fire(reason: str, delay: float) -> None:
            _log.info("cycle triggered", reason=reason, delay=round(delay, 1))
            schedule.fire(reason, clock.monotonic() + max(0.0, delay))
            wake.set()

        watch_triggers(policy, state, reports, fire, clock.now)

    async def cycles() -> None:
        nonlocal exit_code
        try:
            async with asyncio.timeout(options.sync_timeout):
                await state.wait_synced()
        except TimeoutError:
            _log.error("caches did not sync", timeout=options.sync_timeout)
            exit_code = 1
            stop.set()
            await asyncio.Event().wait()
        _log.info("caches synced", pods=len(state.pods.store), nodes=len(state.nodes.store))
        if reports is not None and not await _reports_listed(reports, clock):
            _log.warning("no NodeReports (is the CRD installed?); usage falls back to requests")
        one_shot = options.interval <= 0 and not options.event_driven
        while True:
            if elector is not None and not options.dry_run and not elector.is_leader:
                # A follower plans nothing. Becoming leader starts a cycle at once, whatever
                # the interval's clock says: the work a dead leader left is not kept waiting.
                await elector.leading.wait()
                _log.info("leading: a cycle starts now", identity=elector.identity)
            started = clock.monotonic()
            schedule.started(started)
            try:
                await descheduler.cycle()
            except Exception:  # noqa: BLE001 - any failure of a cycle is logged, never fatal to a loop
                # A failed cycle is logged; a loop tries again at the next interval, a
                # one-shot run ends with exit 1 (never retried in a tight loop).
                _log.exception("descheduling cycle failed")
                if one_shot:
                    exit_code = 1
            else:
                _log_cycle(descheduler, clock.monotonic() - started, schedule, clock, one_shot)
            if one_shot:
                # A rescue taint is not left behind: wait for its add-on, or its timeout.
                while await descheduler.settle_rescues():
                    await clock.sleep(RESCUE_POLL_SECONDS)
                stop.set()
                await asyncio.Event().wait()  # the supervisor stops us from here
            await until_next_cycle(schedule, descheduler.settle_rescues, clock, wake)

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
    if elector is not None:
        running_elector = elector

        async def release() -> None:
            running_elector.stop()

        supervisor.add(RootTask(name="leader-election", run=elector.run, stop=release))
    supervisor.add(RootTask(name="cycles", run=cycles, stage=STAGE_CONTROLLER))

    async def flush_events() -> None:
        # The last cycle's Events go out before the process does (a bounded wait).
        await events.drain(EVENT_DRAIN_SECONDS)

    # Stopped after the cycles (a later stage), so the last cycle's Events are in the queue.
    supervisor.add(RootTask(name="events", run=events.run, stop=flush_events, stage=STAGE_WATCH))
    loop = asyncio.get_running_loop()
    if install_signal_handlers:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
    try:
        await supervisor.run(stop)
    finally:
        if install_signal_handlers:
            for signum in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(signum)
        kube.close()
        server.close()
    return exit_code
