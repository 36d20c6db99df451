"""The swap controller: audit on a timer and on pod changes, enforce if asked, report.

One cycle:
1. sample memory and the kubepods tree, off the event loop;
2. compare with the pods in NodeState (pure ``audit.build_report``). A cycle woken by pod
   events reads only the cgroups of the pods that changed and keeps the rest of the last
   report (pure ``incremental.update_report``); the timer's cycle, every
   ``memorySwap.auditInterval`` however busy the node is, reads the whole tree;
3. with ``memorySwap.enforce``, write the expected limit into drifted containers' cgroups
   (of the changed pods only, in an incremental cycle) and scan them again, so metrics
   show what the kernel holds now; unless the node refuses it (no cgroup v2 with the swap
   controller, or kubelet's swap capacity is not the node's ``SwapTotal``: see
   ``NodeSummary.enforce_refusal``);
4. keep the Node's swap label, capacity annotation and opt-in taint current (guarded
   patch, owned keys only), post kubelet's ``PossibleMemoryBackedVolumesOnDisk`` once;
5. on the timer's cycle, hand the node sample to the swap guide's practice
   (``agent.swap.practice``: the opt-in system.slice settings and the eviction-threshold
   check, which depend on no pod).

Concurrency: everything runs on the loop except file walks and writes, which go to a
worker thread and hand back plain values. Scrapes read ``report`` and ``stats`` from HTTP
threads; both are immutable and replaced by a single assignment. NodeState's listener only
sets an event (it must not block); a burst of pod events is coalesced by ``debounce``.

Pods and the Node come through the ``PodSource`` port (NodeState in the agent), the cgroups
through ``CgroupTree`` (KubepodsTree), so tests hand in doubles instead of patching us.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import structlog

from agent.clock import Clock, sleep_or_set
from agent.config.swap import MemorySwapConfig
from agent.kube.errors import KubeError
from agent.kube.events import ObjectRef
from agent.kube.jsontypes import JsonObject
from agent.kube.reflector import Listener
from agent.node.cgroupfiles import CgroupPathError
from agent.node.containercgroups import KubepodsScan, KubepodsTree
from agent.node.facts import NodeFacts
from agent.node.kubeletconfig import KubeletEvictionSettings
from agent.node.memory import MemoryFacts, read_memory
from agent.node.paths import HostPaths
from agent.node.systemslice import SystemSlice
from agent.runtime.context import AgentContext, KubeContext
from agent.runtime.status import StatusBoard
from agent.runtime.supervisor import RootTask
from agent.swap.audit import (
    AuditReport,
    ContainerAudit,
    NodeSummary,
    SwapWrite,
    build_report,
    enforce_plan,
)
from agent.swap.collector import AuditStats, SwapAuditCollector
from agent.swap.incremental import affected_uids, update_report
from agent.swap.labels import swap_node_builder
from agent.swap.limits import KUBELET_CALC_ERROR
from agent.swap.pods import PodView
from agent.swap.practice import SwapPractice
from agent.swap.published import published
from agent.swap.summary import (
    NOSWAP_EVENT_MESSAGE,
    NOSWAP_EVENT_REASON,
    kubelet_swap_capacity,
    node_summary,
    node_warnings,
    noswap_warning_due,
)
from agent.swap.wakeups import AuditInputs
from agent.telemetry.health import Health

_log = structlog.get_logger(subsystem="swap")
DRIFT_EVENT_REASON = "SwapLimitDrift"
HEALTH_CHECK = "swap-audit"
_MAX_REMEMBERED = 1000


class CgroupTree(Protocol):
    def scan(self, pod_uids: frozenset[str] | None = None) -> KubepodsScan: ...

    def write_swap_max(self, path: str, value: int) -> None: ...


class PodSource(Protocol):
    """This node's pods and Node object, kept current (``NodeState`` is the one we run)."""

    async def wait_synced(self) -> None: ...

    def pod_list(self) -> list[JsonObject]: ...

    def node_object(self) -> JsonObject | None: ...

    def subscribe(self, listener: Listener) -> Callable[[], None]: ...


@dataclass(frozen=True)
class Sample:
    memory: MemoryFacts
    scan: KubepodsScan
    pod_uids: frozenset[str] | None = None
    """The pod cgroup UIDs an incremental audit read; ``None`` for a full audit."""


@dataclass(frozen=True)
class WriteResult:
    write: SwapWrite
    error: str | None


class SwapController:
    def __init__(
        self,
        *,
        config: MemorySwapConfig,
        node_name: str,
        paths: HostPaths,
        facts: NodeFacts,
        clock: Clock,
        cluster: KubeContext | None,
        tree: CgroupTree | None = None,
        pods: PodSource | None = None,
        system_slice: SystemSlice | None = None,
        read_kubelet_config: Callable[[], KubeletEvictionSettings] | None = None,
        health: Health | None = None,
        page_size: int | None = None,
        debounce: float = 1.0,
        status: StatusBoard | None = None,
    ) -> None:
        self.status = status
        self.config = config
        self.node_name = node_name
        self.paths = paths
        self.facts = facts
        self.clock = clock
        self.cluster = cluster
        self.pods: PodSource | None = pods or (cluster.node_state if cluster else None)
        mount = paths.cgroup_root
        self.tree: CgroupTree = tree or KubepodsTree(
            mount, driver=config.cgroup_driver, cgroup_root=config.cgroup_root
        )
        self.health = health
        self.page_size = page_size or os.sysconf("SC_PAGE_SIZE")
        self.debounce = debounce
        self.report: AuditReport | None = None
        self.stats = AuditStats()
        self._poke = asyncio.Event()
        self._inputs = AuditInputs()
        self._noswap_event_sent = False
        self._drift_logged: dict[str, tuple[object, int]] = {}
        self._once: set[str] = set()
        self._calc_logged: set[str] = set()
        self._refusal: str | None = None
        self._last_full: float | None = None
        self._full_due = True
        self.practice = SwapPractice(
            config=config,
            paths=paths,
            warn_once=self._warn_once,
            system_slice=system_slice,
            read_kubelet_config=read_kubelet_config,
        )

    # -- the loop -----------------------------------------------------------------------

    async def run(self) -> None:
        unsubscribe: Callable[[], None] | None = None
        if self.pods is not None:
            await self.pods.wait_synced()
            unsubscribe = self.pods.subscribe(self._on_change)
        try:
            full = True
            while True:
                await self.run_once(full=full)
                full = await self._wait_for_next()
        finally:
            if unsubscribe is not None:
                unsubscribe()

    def _on_change(self, kind: str, obj: JsonObject | None) -> None:
        if self._inputs.changed(kind, obj):
            self._poke.set()

    def _full_audit_in(self) -> float:
        """Seconds until the next full audit: one every ``auditInterval`` since the last,
        however many event-woken (incremental) audits ran in between."""
        interval = float(self.config.audit_interval)
        if self._last_full is None:
            return interval
        return max(0.0, interval - (self.clock.monotonic() - self._last_full))

    async def _wait_for_next(self) -> bool:
        """Wait for pod changes or the timer; ``True`` when the next audit is a full one."""
        poked = await sleep_or_set(self.clock, self._full_audit_in(), self._poke)
        # The timer ran out (or ran out as the poke came): the full audit is due.
        full = not poked or self._full_audit_in() <= 0
        if not full and self._poke.is_set():
            await self.clock.sleep(self.debounce)
        return full or self._full_audit_in() <= 0

    # -- one cycle ----------------------------------------------------------------------

    def _audit(
        self,
        pods: list[JsonObject],
        node: JsonObject | None,
        memory: MemoryFacts | None = None,
        *,
        previous: AuditReport | None = None,
        changed: frozenset[str] | None = None,
        views: list[PodView] | None = None,
    ) -> tuple[Sample, AuditReport]:
        """Sample the node and compare (runs in a worker thread).

        ``pods`` and ``node`` were taken from NodeState on the loop; the reflector replaces
        objects instead of changing them, so reading them here races with nothing. A re-scan
        after enforcement passes the cycle's ``memory`` sample: only the cgroups changed.
        With ``previous`` and ``changed`` (cgroup UIDs of the pods that changed since
        ``previous``), only those pods' cgroups are read, unless the swap basis changed.
        """
        memory = memory or read_memory(self.paths)
        if previous is not None and changed is not None:
            affected = affected_uids(pods, changed)
            sample = Sample(memory, self.tree.scan(affected), affected)
            report = update_report(
                previous, self._summary(sample, node), pods, sample.scan, affected, views=views
            )
            if report is not None:
                return sample, report
        sample = Sample(memory, self.tree.scan())
        return sample, build_report(self._summary(sample, node), pods, sample.scan, views)

    def _summary(self, sample: Sample, node: JsonObject | None) -> NodeSummary:
        return node_summary(
            self.config,
            memory=sample.memory,
            cgroups=self.facts.cgroups,
            noswap=self.facts.tmpfs_noswap,
            scan=sample.scan,
            page_size=self.page_size,
            kubelet_capacity=kubelet_swap_capacity(node),
        )

    def _pods_and_node(self) -> tuple[list[JsonObject], JsonObject | None]:
        if self.pods is None:
            return [], None
        return self.pods.pod_list(), self.pods.node_object()

    async def run_once(self, *, full: bool = True) -> AuditReport | None:
        """One audit cycle; returns the report, or ``None`` when the node could not be read.

        ``full=False`` (a cycle woken by pod events) re-reads only the pods that changed
        since the last cycle, when the last cycle left a report to build on.
        """
        self._poke.clear()
        started = self.clock.monotonic()
        pods, node = self._pods_and_node()
        changed = self._inputs.remember(pods)
        views = self._inputs.views(pods)
        previous = None if full or self._full_due else self.report
        if previous is None:
            changed = None
        # Set again below once this cycle's report stands: a failed cycle loses what changed.
        self._full_due = True
        try:
            sample, report = await asyncio.to_thread(
                self._audit, pods, node, previous=previous, changed=changed, views=views
            )
        except OSError as error:
            _log.warning("swap audit failed", error=str(error))
            self.stats = replace(self.stats, audit_failures=self.stats.audit_failures + 1)
            if self.health is not None:
                self.health.set_degraded(HEALTH_CHECK, f"cannot read the node: {error}")
            return None
        drifted = report.drifted
        results: list[WriteResult] = []
        rescanned = True
        if self.config.enforce and drifted and self._may_enforce(report):
            results = await self._enforce(report, sample.pod_uids)
            if results:
                try:  # scan again, so metrics show what the kernel holds now
                    sample, report = await asyncio.to_thread(
                        self._audit,
                        pods,
                        node,
                        sample.memory,
                        previous=previous if sample.pod_uids is not None else None,
                        changed=sample.pod_uids,
                        views=views,
                    )
                except OSError as error:
                    _log.warning("swap re-scan after enforcement failed", error=str(error))
                    rescanned = False
        self.report = report
        # The report is what the tree held, but for pods written to and not re-read.
        self._full_due = not rescanned
        if sample.pod_uids is None:
            self._last_full = started
        if self.status is not None:
            self.status.publish_swap(published(report))
        self.stats = replace(
            self.stats,
            audits=self.stats.audits + 1,
            last_audit_timestamp=self.clock.now(),
            last_audit_seconds=self.clock.monotonic() - started,
        )
        if self.health is not None:
            self.health.set_degraded(HEALTH_CHECK, None)
        self._log_findings(report, bool(results))
        await self._node_level(report)
        await self._pod_events(drifted, results)
        if sample.pod_uids is None:
            await self.practice.apply(report.summary, sample.memory)
            # Into the stats scrapes read: one assignment, as every change of them.
            self.stats = replace(self.stats, eviction_warning=self.practice.eviction_warning)
        return report

    def _may_enforce(self, report: AuditReport) -> bool:
        """Only where kubelet itself sets swap limits (cgroup v2 with the swap controller)
        and while its swap capacity is the node's. A refusal is logged when it starts or
        its reason changes, and its end when enforcement may go ahead again."""
        refusal = report.summary.enforce_refusal
        if refusal != self._refusal:
            if refusal is None:
                _log.info("swap limit enforcement allowed again", was=self._refusal)
            else:
                _log.warning(
                    f"{refusal}; not enforcing",
                    cgroup_mode=report.summary.cgroup_mode,
                    swap_controller=report.summary.node.swap_controller,
                )
            self._refusal = refusal
        return refusal is None

    async def _enforce(
        self, report: AuditReport, pod_uids: frozenset[str] | None
    ) -> list[WriteResult]:
        plan = enforce_plan(report, pod_uids)
        results = await asyncio.to_thread(self._apply, plan)
        ok = sum(1 for result in results if result.error is None)
        self.stats = replace(
            self.stats,
            writes=self.stats.writes + ok,
            write_failures=self.stats.write_failures + len(results) - ok,
        )
        for result in results:
            write = result.write
            fields: dict[str, Any] = {
                "namespace": write.namespace,
                "pod": write.pod,
                "container": write.container,
                "cgroup": write.path,
                "previous": write.previous,
                "value": write.value,
            }
            if result.error is None:
                _log.info("swap limit enforced", **fields)
            else:
                _log.warning("swap limit enforcement failed", error=result.error, **fields)
        return results

    def _apply(self, plan: tuple[SwapWrite, ...]) -> list[WriteResult]:
        results = []
        for write in plan:
            try:
                self.tree.write_swap_max(write.path, write.value)
            except (CgroupPathError, OSError) as error:
                results.append(WriteResult(write, str(error)))
            else:
                results.append(WriteResult(write, None))
        return results

    def _log_findings(self, report: AuditReport, enforced: bool) -> None:
        current: dict[str, tuple[object, int]] = {}
        for row in report.drifted:
            key = row.cgroup or f"{row.pod_uid}/{row.container}"
            current[key] = (row.actual, row.expected.bytes)
            if self._drift_logged.get(key) != current[key]:
                _log.warning(
                    "swap limit drift",
                    namespace=row.namespace,
                    pod=row.pod,
                    container=row.container,
                    cgroup=row.cgroup,
                    actual=row.actual,
                    expected=row.expected.bytes,
                    reason=row.expected.reason,
                )
        for key in self._drift_logged.keys() - current.keys():
            _log.info("swap limit drift resolved", cgroup=key, enforced=enforced)
        self._drift_logged = current
        # kubelet logs its calculation errors each time it creates the container; we log
        # each once while it lasts (keyed per cycle, so gone pods are forgotten).
        errors = {
            f"{row.pod_uid}/{row.container}:{row.expected.error}": row
            for row in report.containers
            if row.expected.error
        }
        for key in errors.keys() - self._calc_logged:
            row = errors[key]
            _log.warning(
                KUBELET_CALC_ERROR,
                error=row.expected.error,
                namespace=row.namespace,
                pod=row.pod,
                container=row.container,
            )
        self._calc_logged = set(errors)

    def _warn_once(self, key: str, message: str, **fields: Any) -> None:
        if key in self._once:
            return
        if len(self._once) >= _MAX_REMEMBERED:  # bound the memory of a long-running agent
            self._once.clear()
        self._once.add(key)
        _log.warning(message, **fields)

    # -- node level ---------------------------------------------------------------------

    async def _node_level(self, report: AuditReport) -> None:
        summary = report.summary
        for warning in node_warnings(summary):
            self._warn_once(f"node:{warning}", warning)
        if self.cluster is None:
            return
        build = swap_node_builder(
            swap_on=summary.swap_on,
            capacity_bytes=summary.swap_total_bytes,
            taint=self.config.taint_swap_nodes,
        )
        node = self.cluster.node_state.node_object()
        if node is None or build(node):
            try:
                node = await self.cluster.patcher.update(build, what="swap labels", node=node)
            except KubeError as error:
                self._warn_once(
                    f"patch:{error}", "cannot update the node's swap label", error=str(error)
                )
        if noswap_warning_due(summary) and not self._noswap_event_sent:
            uid = str(((node or {}).get("metadata") or {}).get("uid") or "")
            self._noswap_event_sent = await self.cluster.events.emit(
                ObjectRef.node(self.node_name, uid),
                "Warning",
                NOSWAP_EVENT_REASON,
                NOSWAP_EVENT_MESSAGE,
            )

    async def _pod_events(
        self, drifted: tuple[ContainerAudit, ...], results: list[WriteResult]
    ) -> None:
        if self.cluster is None or not self.config.pod_drift_events:
            return
        outcomes = {result.write.path: result.error for result in results}
        for row in drifted:
            message = (
                f"container {row.container}: memory.swap.max is {row.actual}, expected "
                f"{row.expected.bytes} ({row.expected.reason})"
            )
            if row.cgroup in outcomes:
                error = outcomes[row.cgroup]
                message += "; set to expected" if error is None else f"; not corrected: {error}"
            ref = ObjectRef(kind="Pod", name=row.pod, namespace=row.namespace, uid=row.pod_uid)
            await self.cluster.events.emit(
                ref,
                "Warning",
                DRIFT_EVENT_REASON,
                message,
                min_interval=self.config.pod_drift_event_interval,
            )


def root_tasks(ctx: AgentContext) -> list[RootTask]:
    """The swap capability: one supervised controller and its metrics collector."""
    controller = SwapController(
        config=ctx.config.memory_swap,
        node_name=ctx.node_name,
        paths=ctx.paths,
        facts=ctx.facts,
        clock=ctx.clock,
        cluster=ctx.cluster,
        health=ctx.health,
        status=ctx.status,
    )
    ctx.registry.register(SwapAuditCollector(lambda: controller.report, lambda: controller.stats))
    return [RootTask(name="swap", run=controller.run)]
