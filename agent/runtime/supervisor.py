"""Named root tasks, supervised together, with a staged shutdown.

A root task that ends unexpectedly is logged and restarted with backoff. A run that lasted
``healthy_after`` seconds resets the count, so only failures in a row count; after
``max_restarts`` of them the task's health check fails and, if it is critical (the default),
the process exits non-zero so that systemd or the kubelet restarts it. Nothing dies silently.

Shutdown is staged by ``stage`` number, highest first: controllers (stage 2) get to finish
their current step within a timeout before watches (stage 1) and the HTTP server (stage 0,
owned by the entrypoint) go away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from agent.telemetry.health import Health

_log = structlog.get_logger(subsystem="supervisor")

STAGE_WATCH = 1
STAGE_CONTROLLER = 2


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
    def __init__(self, health: Health, *, stop_timeout: float = 10.0) -> None:
        self.health = health
        self.stop_timeout = stop_timeout
        self._tasks: list[RootTask] = []
        self._running: dict[str, asyncio.Task[None]] = {}
        self._fatal: asyncio.Future[str] | None = None

    def add(self, task: RootTask) -> None:
        self._tasks.append(task)

    async def _guard(self, task: RootTask) -> None:
        failures = 0
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await task.run()
                _log.warning("root task returned; restarting", task=task.name)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - any crash is logged and the task restarted
                _log.exception("root task crashed", task=task.name, failures=failures + 1)
            if loop.time() - started >= task.healthy_after:
                failures = 0
            failures += 1
            if failures > task.max_restarts:
                self.health.set_failed(task.name, "too many restarts")
                if task.critical and self._fatal is not None and not self._fatal.done():
                    self._fatal.set_result(task.name)
                return
            await asyncio.sleep(min(30.0, 0.5 * 2 ** (failures - 1)))

    async def run(self, stop: asyncio.Event) -> None:
        """Run every task until ``stop`` is set, then stop them stage by stage."""
        self._fatal = asyncio.get_running_loop().create_future()
        for task in self._tasks:
            self._running[task.name] = asyncio.create_task(self._guard(task), name=task.name)
        stopper: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
        fatal: asyncio.Future[object] = self._fatal  # type: ignore[assignment]
        try:
            await asyncio.wait({stopper, fatal}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
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
