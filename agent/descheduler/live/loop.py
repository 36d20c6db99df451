"""When cycles run: after the caches agree, then at every interval, trigger or change of
leader, until the one-shot cycle is done or the process stops.

A follower plans nothing and waits to lead; becoming leader starts a cycle at once, whatever
the interval's clock says (the work a dead leader left is not kept waiting). Between cycles
rescue and emptying taints are settled (in memory; the API is called only to remove one). A
failed cycle is logged: a loop tries again at its next start, a one-shot run ends with exit 1.
So does a one-shot cycle whose plan failed in part (a plugin or a profile; a metrics source
that gave nothing): the rest of it was carried out, and the exit code says it was not all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from agent.clock import Clock, sleep_or_set
from agent.descheduler.cache.state import ClusterState
from agent.descheduler.live.runner import Descheduler, log_cycle
from agent.descheduler.live.triggers import CycleSchedule
from agent.descheduler.options import DeschedulerOptions
from agent.kube.errors import NotFound
from agent.kube.leaderelection import LeaderElector
from agent.kube.nodereports import NodeReportCache

TAINT_POLL_SECONDS = 1.0
"""How often an in-place rescue or emptying taint is checked against its add-on or its
replacements (in memory, no calls)."""
REPORTS_SYNC_SECONDS = 10.0
"""How long the first cycle waits for the agents' NodeReports; without them (no CRD, no
agents) every node falls back to requests, which the plan records and a metric counts."""
CACHES_SYNC_SECONDS = 600.0
"""A cache that has not listed by then fails the run (exit 1)."""
METRICS_SYNC_SECONDS = 60.0
"""How long the first cycle waits for metrics.k8s.io's first sample (upstream: 1 min)."""

_log = structlog.get_logger(subsystem="descheduler")


class CycleLoop:
    """The root task that runs the cycles; ``exit_code`` is the process's when it stops it."""

    def __init__(
        self,
        descheduler: Descheduler,
        state: ClusterState,
        options: DeschedulerOptions,
        *,
        clock: Clock,
        stop: asyncio.Event,
        reports: NodeReportCache | None,
        elector: LeaderElector | None,
    ) -> None:
        self.descheduler = descheduler
        self.state = state
        self.options = options
        self.clock = clock
        self.stop = stop
        self.reports = reports
        self.elector = elector
        self.schedule = CycleSchedule(options.descheduling_interval, options.min_cycle_spacing)
        self.wake = asyncio.Event()
        """Set by each trigger: the wait for the next cycle looks at the schedule again."""
        self.exit_code = 0

    def trigger(self, reason: str, delay: float) -> None:
        """Ask for a cycle ``delay`` seconds from now (``triggerfeeds``' callback)."""
        _log.info("cycle triggered", reason=reason, delay=round(delay, 1))
        self.schedule.fire(reason, self.clock.monotonic() + max(0.0, delay))
        self.wake.set()

    async def run(self) -> None:
        options, clock, state = self.options, self.clock, self.state
        try:
            async with asyncio.timeout(CACHES_SYNC_SECONDS):
                await state.wait_synced()
        except TimeoutError:
            _log.error("caches did not sync", timeout=CACHES_SYNC_SECONDS)
            await self._end(1)
        _log.info("caches synced", pods=len(state.pods.store), nodes=len(state.nodes.store))
        if self.reports is not None and not await reports_listed(self.reports, clock):
            _log.warning("no NodeReports (is the CRD installed?); usage falls back to requests")
        feed = self.descheduler.usage_feed
        if feed is not None:
            await feed.ready(METRICS_SYNC_SECONDS)
        one_shot = options.one_shot
        elector = self.elector
        while True:
            if elector is not None and not options.dry_run and not elector.is_leader:
                # A follower plans nothing. Becoming leader starts a cycle at once, whatever
                # the interval's clock says: the work a dead leader left is not kept waiting.
                await elector.leading.wait()
                self.descheduler.leading_again()
                _log.info("leading: a cycle starts now", identity=elector.identity)
            started = clock.monotonic()
            self.schedule.started(started)
            try:
                plan = await self.descheduler.cycle()
            except Exception:  # noqa: BLE001 - any failure of a cycle is logged, never fatal to a loop
                # A failed cycle is logged; a loop tries again at the next interval, a
                # one-shot run ends with exit 1 (never retried in a tight loop).
                _log.exception("descheduling cycle failed")
                if one_shot:
                    self.exit_code = 1
            else:
                log_cycle(
                    self.descheduler, clock.monotonic() - started, self.schedule, clock, one_shot
                )
                if one_shot and plan is not None and plan.errors:
                    self.exit_code = 1  # the plan failed in part: never exit 0 on it
            if one_shot:
                # A rescue taint is not left behind: wait for its add-on, or its timeout;
                # an emptying taint for the replacements, or its hold.
                while await self.descheduler.settle_taints():
                    await clock.sleep(TAINT_POLL_SECONDS)
                await self._end(self.exit_code)
            await until_next_cycle(self.schedule, self.descheduler.settle_taints, clock, self.wake)

    async def _end(self, code: int) -> None:
        """Ask the process to stop with ``code``, and wait to be cancelled by its supervisor."""
        self.exit_code = code
        self.stop.set()
        await asyncio.Event().wait()


async def until_next_cycle(
    schedule: CycleSchedule,
    settle: Callable[[], Awaitable[bool]],
    clock: Clock,
    wake: asyncio.Event,
) -> None:
    """Sleep until the schedule says a cycle is due (``wake`` is set by each trigger).

    Meanwhile ``settle`` runs at least every ``TAINT_POLL_SECONDS`` while it says rescue or
    emptying taints are in place (in memory: it calls the API only to remove one).
    """
    while True:
        wake.clear()
        rescuing = await settle()
        now = clock.monotonic()
        due = schedule.next_start()
        if due is not None and now >= due:
            return
        poll = now + TAINT_POLL_SECONDS if rescuing else None
        deadlines = [t for t in (due, poll) if t is not None]
        await sleep_or_set(clock, min(deadlines) - now if deadlines else None, wake)


async def reports_listed(reports: NodeReportCache, clock: Clock) -> bool:
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
