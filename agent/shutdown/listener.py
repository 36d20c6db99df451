"""The logind session's task, supervised: the controller must never go deaf without knowing.

``LogindSession.run`` reconnects by itself and should never end. But if it ever did (a bug,
an exception nobody foresaw), the agent would hear no PrepareForShutdown again while still
holding its lock and reporting ready, and every later shutdown of the node would wait the
full ``InhibitDelayMaxSec`` with no pod terminated. So the controller takes its events from
here: ``next_event`` raises ``SessionEnded`` as soon as the task is over, which fails the
controller's root task, and the supervisor restarts it (and reports it, after too many).

``stop`` ends the task for real: closing the bus alone would only make it reconnect.

Concurrency: all on the event loop; the session's queue is the only hand-off.
"""

from __future__ import annotations

import asyncio

from agent.clock import SystemClock, sleep_or_done
from agent.logind.session import LogindEvent, LogindSession


class SessionEnded(RuntimeError):
    """The logind session task ended although nobody stopped it."""


class SessionListener:
    def __init__(self, session: LogindSession) -> None:
        self.session = session
        self._task: asyncio.Task[None] | None = None
        self.stopped = False

    def start(self) -> None:
        self.stopped = False
        self._task = asyncio.get_running_loop().create_task(
            self.session.run(), name="logind-session"
        )

    async def next_event(self, timeout: float) -> LogindEvent | None:
        """The next event, or ``None`` after ``timeout``. Raises ``SessionEnded``.

        Once stopped, it never returns: a stopped controller handles nothing more.
        """
        task = self._task
        if self.stopped or task is None:
            return await _forever()
        self._check(task)
        getter = asyncio.ensure_future(self.session.events.get())
        try:
            # Both are futures of ours, so the race only watches them: it never cancels the
            # session task, nor swallows our cancellation. Real time, as the periodic lock
            # check always ran on.
            await sleep_or_done(SystemClock(), timeout, getter, task)
        finally:
            if not getter.done():
                getter.cancel()  # Queue.get leaves the item queued when cancelled
        if self._stopped_meanwhile():  # not even an event already taken counts then
            return await _forever()
        if getter.done() and not getter.cancelled():
            return getter.result()  # an event that came with the end is still delivered
        self._check(task)
        return None

    def _stopped_meanwhile(self) -> bool:
        return self.stopped  # a method, so that type narrowing does not outlive the await

    def _check(self, task: asyncio.Task[None]) -> None:
        if task.done() and not self.stopped:
            error = None if task.cancelled() else task.exception()
            raise SessionEnded(f"the logind session task ended: {error!r}") from error

    def cancel(self) -> None:
        """Cancel the session task; from now on no event is handed out."""
        self.stopped = True
        if self._task is not None:
            self._task.cancel()

    async def stop(self) -> None:
        """Cancel the session task and wait until it has ended (idempotent)."""
        task = self._task
        self.cancel()
        if task is not None:
            await asyncio.wait({task})  # raises only if we are cancelled ourselves


async def _forever() -> LogindEvent | None:
    """Wait until cancelled (the controller's task, when the supervisor stops it)."""
    await asyncio.Event().wait()
    return None  # pragma: no cover - never reached
