"""The agent's standing with logind: exactly one delay lock, a long enough delay, problems said.

The controller hands every bus event that is not a PrepareForShutdown to ``on_bus_event``:
a (re)connection or a logind restart triggers ``ensure_lock``, which

- makes sure logind lists our lock, taking a new one only if it is really gone (the
  keeper closes the old fd; never two locks);
- raises logind's ``InhibitDelayMaxSec`` to the budget if needed (once per connection and
  per logind instance, since a restarted logind re-reads its config), in the background;
- warns once if kubelet holds a shutdown inhibitor too;
- warns (log, ``kubelet_companion_logind_dropin_overridden``, degraded ``logind-dropin-order``)
  when another drop-in has the last word on ``InhibitDelayMaxSec`` instead of ours: it
  sorts after ours, or hides ours (``agent.logind.dropin_order``).

The lock comes first: ``InhibitDelayMaxSec`` applies when a shutdown starts, not when a
lock is taken, so a lock taken before the override is just as good, and held sooner.
Everything here runs on the event loop, except the keeper's ``release`` (the watchdog's).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog

from agent.clock import Clock
from agent.config.shutdown import ShutdownOptions
from agent.logind.dropin import scan_dropins
from agent.logind.dropin_order import Override, overriding_dropins
from agent.logind.errors import CallFailed, LogindError
from agent.logind.facts import kubelet_shutdown_delay_locks
from agent.logind.keeper import OPERATION_IN_PROGRESS, LockKeeper
from agent.logind.manager import Inhibitor
from agent.logind.session import (
    BusConnected,
    BusLost,
    LogindEvent,
    LogindOwnerChanged,
    LogindSession,
)
from agent.node.paths import HostPaths
from agent.shutdown.delay import DelayOutcome, ensure_inhibit_delay
from agent.shutdown.metrics import ShutdownMetrics
from agent.telemetry.health import Health

WHO = "kubelet-companion"
WHY = "kubelet-companion terminates this node's pods by priority before it shuts down"
LOCK_CHECK = "logind-lock"
DEGRADED_DELAY = "logind-inhibit-delay"
DEGRADED_LOGIND = "logind"
DEGRADED_DROPIN_ORDER = "logind-dropin-order"
FIRST_CONTACT_SECONDS = 2.0
"""How long start-up waits for the bus before deciding without logind (a resume is urgent)."""
CANCEL_RETAKE_DELAYS = (0.0, 0.1, 0.2, 0.4, 0.8)
"""After a cancellation logind may still be winding the operation down for a moment."""

_log = structlog.get_logger(subsystem="shutdown.inhibitor")


class InhibitorGuard:
    def __init__(
        self,
        *,
        options: ShutdownOptions,
        budget: int,
        metrics: ShutdownMetrics,
        health: Health,
        clock: Clock,
        paths: HostPaths,
    ) -> None:
        self.options = options
        self.paths = paths
        self.budget = budget
        """Whole seconds, as summed by the phase plan; logind is asked for this plus the margin."""
        self.metrics = metrics
        self.health = health
        self.session = LogindSession(
            call_timeout=options.dbus_call_timeout, monotonic=clock.monotonic, now=clock.now
        )
        self.keeper = LockKeeper(who=WHO, why=WHY, on_change=self._lock_changed)
        self._delay_checked = False
        self._delay_task: asyncio.Task[None] | None = None
        self._refused = False
        self._warned_kubelet = False
        self._problem: str | None = None

    @property
    def enabled(self) -> bool:
        """kubelet's rule: a budget of zero seconds turns graceful shutdown off (no lock)."""
        return self.budget > 0

    # -- lifecycle ----------------------------------------------------------------------

    def prepare(self) -> None:
        """At the start of every run of the root task: want a lock, gate /readyz on it."""
        if self.enabled:
            self.health.expect(LOCK_CHECK)
            self.keeper.want()

    async def first_contact(self) -> list[LogindEvent]:
        """Wait (bounded) for the first bus outcome; return the events it consumed."""
        pending: list[LogindEvent] = []
        try:
            async with asyncio.timeout(min(self.options.dbus_call_timeout, FIRST_CONTACT_SECONDS)):
                while not self.session.connected:
                    event = await self.session.events.get()
                    pending.append(event)
                    if isinstance(event, BusLost):
                        break
        except TimeoutError:
            pass
        return pending

    async def preparing_for_shutdown(self) -> bool | None:
        """logind's ``PreparingForShutdown``; ``None`` when logind cannot be asked."""
        manager = self.session.manager
        if manager is None:
            return None
        try:
            return bool(await manager.get_property("PreparingForShutdown"))
        except LogindError as error:
            _log.warning("cannot read PreparingForShutdown", error=str(error))
            return None

    def close(self) -> None:
        if self._delay_task is not None:
            self._delay_task.cancel()
        self.session.close()
        self.keeper.release()

    @property
    def lock_is_fine(self) -> bool:
        """Nothing to retry soon: no bus to ask, no lock wanted, or the lock is held."""
        return not self.session.connected or not self.keeper.wanted or self.keeper.held

    # -- events -------------------------------------------------------------------------

    async def on_bus_event(self, event: LogindEvent) -> None:
        if isinstance(event, BusConnected):
            self._delay_checked = False
            _log.info("connected to the system bus", logind_present=event.logind_present)
            if event.logind_present:
                await self.ensure_lock(reason="bus connected")
            else:
                self._set_problem("logind is not on the system bus")
        elif isinstance(event, LogindOwnerChanged):
            if event.owner is None:
                self._set_problem("logind left the system bus")
            else:
                _log.info("logind (re)appeared on the bus", owner=event.owner)
                self._delay_checked = False  # a restarted logind re-read its config
                await self.ensure_lock(reason="logind restarted")
        elif isinstance(event, BusLost):
            self._set_problem(event.reason)

    async def retake_after_cancel(self) -> None:
        """Want a lock again and take it, retrying briefly while logind winds down."""
        if not self.enabled:
            return
        self.keeper.want()
        if self.session.manager is None:
            return  # no bus: the lock is taken when the bus (re)connects
        for delay in CANCEL_RETAKE_DELAYS:
            await asyncio.sleep(delay)
            await self.ensure_lock(reason="shutdown cancelled")
            if self.keeper.held:
                return

    async def ensure_lock(self, *, reason: str) -> None:
        """logind is on the bus: exactly one lock of ours, and a long enough delay."""
        manager = self.session.manager
        if manager is None or not self.enabled:
            return
        try:
            result = await self.keeper.ensure(manager, self.session.own_pid)
        except CallFailed as error:
            if error.name == OPERATION_IN_PROGRESS:
                if not self._refused:
                    _log.info("logind is already shutting down; no new lock until that ends")
                self._refused = True
                return
            self._set_problem(f"logind call failed: {error}")
            return
        except LogindError as error:
            self._set_problem(f"logind call failed: {error}")
            return
        self._set_problem(None)
        self._refused = False
        self._start_delay_check()
        if result.action == "taken":
            _log.info("shutdown delay lock taken", reason=reason)
        elif result.action == "kept" and reason == "logind restarted":
            _log.info("our shutdown delay lock survived the logind restart")
        self._warn_about_kubelet(result.inhibitors)

    # -- details ------------------------------------------------------------------------

    def _start_delay_check(self) -> None:
        """Check the delay in the background: its re-reads take up to 3 s when the override
        does not take, and a PrepareForShutdown must not queue behind them."""
        if self._delay_checked or (self._delay_task is not None and not self._delay_task.done()):
            return
        self._delay_task = asyncio.get_running_loop().create_task(self._check_delay())

    async def _check_delay(self) -> None:
        manager = self.session.manager
        if manager is None:
            return
        try:
            outcome = await ensure_inhibit_delay(
                manager,
                budget=self.budget,
                margin=self.options.inhibit_delay_margin,
                dropin_path=Path(self.options.logind_drop_in_path),
                manage=self.options.manage_logind_delay,
            )
        except LogindError as error:
            _log.warning("cannot read logind's InhibitDelayMaxSec", error=str(error))
            return  # the next connection or logind restart checks again
        self._delay_checked = True
        self._report_delay(outcome)
        if self.options.manage_logind_delay:
            self._report_dropin_order(await asyncio.to_thread(self._overriding_dropins))

    def _overriding_dropins(self) -> list[Override]:
        ours, files = scan_dropins(
            Path(self.options.logind_drop_in_path), etc=self.paths.etc, run=self.paths.run
        )
        return overriding_dropins(ours, files)

    def _report_dropin_order(self, overrides: list[Override]) -> None:
        self.metrics.dropin_overridden.set(len(overrides))
        problem = None
        if overrides:
            problem = (
                f"another logind drop-in has the last word on InhibitDelayMaxSec, not "
                f"{self.options.logind_drop_in_path}: "
                + "; ".join(override.describe() for override in overrides)
            )
            _log.warning("our logind drop-in is overridden", problem=problem)
        self.health.set_degraded(DEGRADED_DROPIN_ORDER, problem)

    def _report_delay(self, outcome: DelayOutcome) -> None:
        self.metrics.inhibit_delay_max.set(outcome.seconds)
        self.metrics.inhibit_delay_too_short.set(0 if outcome.sufficient else 1)
        self.health.set_degraded(DEGRADED_DELAY, outcome.problem)
        if outcome.problem:
            _log.error("logind will not wait for the whole shutdown", problem=outcome.problem)
        elif outcome.overridden:
            _log.info("logind InhibitDelayMaxSec raised", seconds=outcome.seconds)

    def _set_problem(self, problem: str | None) -> None:
        if problem != self._problem:
            if problem is None:
                _log.info("logind reachable again")
            else:
                _log.warning("logind unavailable; the lock cannot be checked", reason=problem)
        self._problem = problem
        self.health.set_degraded(DEGRADED_LOGIND, problem)

    def _warn_about_kubelet(self, inhibitors: tuple[Inhibitor, ...]) -> None:
        if self._warned_kubelet:
            return
        if kubelet_shutdown_delay_locks(inhibitors):
            self._warned_kubelet = True
            _log.warning(
                "kubelet also holds a shutdown inhibitor: two shutdown managers are at work; "
                "set kubelet's shutdownGracePeriod to 0 to leave shutdown to kubelet-companion"
            )

    def _lock_changed(self, held: bool) -> None:
        """Called by the keeper from any thread: the gauge and ``Health`` are safe there."""
        self.metrics.lock_held.set(1 if held else 0)
        if self.enabled:
            self.health.set_ready(LOCK_CHECK, held)
