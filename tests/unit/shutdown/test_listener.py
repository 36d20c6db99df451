"""The listener's race for the next logind event: the session task is watched, never cancelled.

``next_event`` waits for an event, the end of the session task, or its timeout, whichever
comes first. A session task that dies while the controller waits must end the wait at once
(the controller's root task fails and is restarted), and a timeout must leave the session
task running.
"""

from __future__ import annotations

import asyncio

import pytest

from agent.logind.session import PrepareForShutdown
from agent.shutdown.listener import SessionEnded, SessionListener
from tests.harness.waiting import wait_until


class _Events(asyncio.Queue[PrepareForShutdown]):
    """The session's queue, counting the listener's reads: a positive sign that it waits."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get(self) -> PrepareForShutdown:
        self.reads += 1
        return await super().get()


class _Session:
    """The part of ``LogindSession`` the listener uses: its queue, and a task to run, which
    answers each ping (a sign it still runs) until told to die."""

    def __init__(self) -> None:
        self.events = _Events()
        self.requests: asyncio.Queue[str] = asyncio.Queue()
        self.pongs = 0

    async def run(self) -> None:
        while await self.requests.get() == "ping":
            self.pongs += 1
        raise RuntimeError("the session broke")


def _listener(session: _Session) -> SessionListener:
    listener = SessionListener(session)  # type: ignore[arg-type]  # a double of the session
    listener.start()
    return listener


async def test_a_session_task_that_dies_mid_wait_ends_the_wait_at_once() -> None:
    """A long timeout does not hide the session's end: SessionEnded comes with it."""
    session = _Session()
    listener = _listener(session)
    waiting = asyncio.ensure_future(listener.next_event(3600))
    # The listener reads the queue only once inside its wait (or it returned early).
    await wait_until(lambda: session.events.reads or waiting.done(), "the listener to wait")
    assert not waiting.done()
    session.requests.put_nowait("die")
    with pytest.raises(SessionEnded):
        await asyncio.wait_for(waiting, 5)


async def test_a_timeout_leaves_the_session_task_running_and_events_queued() -> None:
    """``None`` after the timeout, the session task untouched; the next event still comes."""
    session = _Session()
    listener = _listener(session)
    assert await listener.next_event(0.01) is None
    task = listener._task  # the one task the listener owns
    assert task is not None
    # The session task answers a ping after the timeout: a cancel, had there been one,
    # would have ended it before it could.
    session.requests.put_nowait("ping")
    await wait_until(lambda: session.pongs or task.done(), "the session task to answer")
    assert not task.done()
    assert session.pongs == 1
    event = PrepareForShutdown(active=True, monotonic=1.0, wall=1.0)
    session.events.put_nowait(event)
    assert await listener.next_event(5) is event
    await listener.stop()
