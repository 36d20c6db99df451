"""Named root tasks, supervised together, with a staged shutdown.

A root task that ends unexpectedly is logged and restarted with backoff. A run that lasted
``healthy_after`` seconds resets the count, so only failures in a row count; after
``max_restarts`` of them the task's health check fails and, if it is critical (the default),
the process exits non-zero so that systemd or the kubelet restarts it. Nothing dies silently.
The restart waits come from the one retry policy (``agent.retrying``: 0.5 s doubling up to
30 s, no jitter) and pass through the injected clock, so tests drive them in fake time.

Shutdown is staged by ``stage`` number, highest first: controllers (stage 2) get to finish
their current step within a timeout before watches (stage 1) and the HTTP server (stage 0,
owned by the entrypoint) go away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from agent.clock import Clock, SystemClock, first_done
from agent.retrying import Backoff, RetryPolicy
from agent.telemetry.health import Health

_log = structlog.get_logger(subsystem="supervisor")

STAGE_WATCH = 1
STAGE_CONTROLLER = 2

RESTART_BACKOFF = Backoff(initial=0.5, factor=2.0, cap=30.0, jitter=0.0)
"""Waits before restart 1, 2, 3, ...: 0.5 s, 1 s, 2 s, ... up to 30 s. No jitter: one
process's tasks need no spreading, and a predictable wait reads better in the log."""


@dataclass(frozen=True)
class RootTask:
    name: str
    run: Callable[[], Awaitable[None]]
    stage: int = STAGE_CONTROLLER
    critical: bool = True
    max_restarts: int = 10
    healthy_after: float = 60.0
    stop: Callable[[], Awaitable[None]] | None = None
    """Optional graceful stop, awaited (with the stop timeout) before cancellation."""


class FatalTaskError(RuntimeError):
    """A critical root task kept failing."""


class Supervisor:
    def __init__(
        self, health: Health, *, stop_timeout: float = 10.0, clock: Clock | None = None
    ) -> None:
        self.health = health
        self.stop_timeout = stop_timeout
        self.clock: Clock = clock or SystemClock()
        self._tasks: list[RootTask] = []
        self._running: dict[str, asyncio.Task[None]] = {}
        self._fatal: asyncio.Future[str] | None = None

    def add(self, task: RootTask) -> None:
        self._tasks.append(task)

    async def _guard(self, task: RootTask) -> None:
        # max_restarts restarts after the first run: that many tries in all, plus one.
        policy = RetryPolicy(
            backoff=RESTART_BACKOFF,
            attempts=task.max_restarts + 1,
            monotonic=self.clock.monotonic,
        )
        failures = 0
        while True:
            started = self.clock.monotonic()
            try:
                await task.run()
                _log.warning("root task returned; restarting", task=task.name)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - any crash is logged and the task restarted
                _log.exception("root task crashed", task=task.name, failures=failures + 1)
            if self.clock.monotonic() - started >= task.healthy_after:
                failures = 0
            failures += 1
            wait = policy.next_wait(failures)
            if wait is None:
                self.health.set_failed(task.name, "too many restarts")
                if task.critical and self._fatal is not None and not self._fatal.done():
                    self._fatal.set_result(task.name)
                return
            await self.clock.sleep(wait)

    async def run(self, stop: asyncio.Event) -> None:
        """Run every task until ``stop`` is set, then stop them stage by stage."""
        self._fatal = asyncio.get_running_loop().create_future()
        for task in self._tasks:
            self._running[task.name] = asyncio.create_task(self._guard(task), name=task.name)
        try:
            # ``_fatal`` is ours, only watched (its result is read below); the stop waiter
            # is the race's own, cancelled however the race ends, our cancel included.
            await first_done(stop.wait(), self._fatal)
        finally:
            await self.shutdown()
        if self._fatal.done():
            raise FatalTaskError(f"critical task {self._fatal.result()} kept failing")

    async def shutdown(self) -> None:
        for stage in sorted({task.stage for task in self._tasks}, reverse=True):
            members = [task for task in self._tasks if task.stage == stage]
            stops = [task.stop() for task in members if task.stop is not None]
            if stops:
                try:
                    async with asyncio.timeout(self.stop_timeout):
                        await asyncio.gather(*stops, return_exceptions=True)
                except TimeoutError:
                    _log.warning("graceful stop timed out", stage=stage)
            running = [self._running[t.name] for t in members if t.name in self._running]
            for handle in running:
                handle.cancel()
            if running:
                await asyncio.wait(running, timeout=self.stop_timeout)
