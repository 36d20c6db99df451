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


class _Session:
    """The part of ``LogindSession`` the listener uses: its queue, and a task to run."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[PrepareForShutdown] = asyncio.Queue()
        self.die = asyncio.Event()

    async def run(self) -> None:
        await self.die.wait()
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
    await asyncio.sleep(0.01)
    assert not waiting.done()
    session.die.set()
    with pytest.raises(SessionEnded):
        await asyncio.wait_for(waiting, 5)


async def test_a_timeout_leaves_the_session_task_running_and_events_queued() -> None:
    """``None`` after the timeout, the session task untouched; the next event still comes."""
    session = _Session()
    listener = _listener(session)
    assert await listener.next_event(0.01) is None
    await asyncio.sleep(0.01)  # a cancel, had there been one, would have landed by now
    assert listener._task is not None
    assert not listener._task.done()  # the one task the listener owns, still at work
    event = PrepareForShutdown(active=True, monotonic=1.0, wall=1.0)
    session.events.put_nowait(event)
    assert await listener.next_event(5) is event
    await listener.stop()
