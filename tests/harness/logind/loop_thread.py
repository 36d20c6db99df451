"""A private asyncio loop on a background thread for the harness's own D-Bus connections.

The systemd1 stand-in and the harness's login1 client must keep serving the bus while
a test blocks (sync tests) or runs its own event loop (async tests). Giving them a
loop of their own on a daemon thread makes both cases work, and lets the harness
offer a plain synchronous API: each call is marshalled onto this loop and waited for
with a timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Runs one asyncio event loop on a daemon thread until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError(f"{self._name} is not running")
        return self._loop

    def start(self) -> None:
        if self._thread is not None:
            return
        ready = threading.Event()
        loop = asyncio.new_event_loop()

        def _run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=_run, name=self._name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout=5):
            raise RuntimeError(f"{self._name} did not start")

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and wait at most ``timeout`` seconds for its result."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run() called from its own loop thread (deadlock)")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"{self._name}: operation timed out after {timeout} s") from None

    def call(self, fn: Callable[[], T], timeout: float) -> T:
        """Run plain ``fn()`` on the loop thread (e.g. to make it a child's parent thread)."""

        async def _call() -> T:
            return fn()

        return self.run(_call(), timeout)

    def call_soon(self, fn: Callable[..., object], *args: object) -> None:
        """Schedule ``fn(*args)`` on the loop from any thread."""
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 5) -> None:
        """Cancel leftover tasks, stop the loop and join the thread. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if thread.is_alive():
            with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
                asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        if not thread.is_alive():
            loop.close()
        self._loop = None
        self._thread = None
