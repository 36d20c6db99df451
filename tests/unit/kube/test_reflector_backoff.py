"""The reflector's reconnect policy, driven by a transport double (no server needed).

The reflector's backoff pause is injected: the double records each delay asked for and
returns at once, so a test waits for a number of recorded backoffs (a positive signal)
instead of sleeping and counting reconnects.
"""

import asyncio
import threading
from typing import Any

from agent.kube.reflector import Reflector
from agent.kube.resources import PODS
from tests.harness.waiting import wait_until

BACKOFFS = 9
"""Enough for the default backoff (0.5 s doubling, capped at 30 s) to reach its cap twice."""


class _EmptyStream:
    def __iter__(self) -> Any:
        return iter(())

    def close(self) -> None:
        """Nothing to release."""


class _InstantlyEndingWatches:
    """A server that answers every watch with an immediately finished, empty stream."""

    def __init__(self) -> None:
        self.watches = 0

    def list(self, *_: Any, **__: Any) -> dict[str, Any]:
        return {"items": [], "metadata": {"resourceVersion": "1"}}

    def watch(self, *_: Any, **__: Any) -> _EmptyStream:
        self.watches += 1
        return _EmptyStream()


class _RecordedPauses:
    """A ``Pause`` that records each delay and returns at once; from the ``park_after``-th
    on it waits, like the real one, until the reflector is stopped."""

    def __init__(self, park_after: int) -> None:
        self.park_after = park_after
        # Appended on the watch thread, read on the loop: a list append is atomic, and the
        # test reads only its length and, after the thread has ended, its items.
        self.delays: list[float] = []

    def __call__(self, stopping: threading.Event, seconds: float, /) -> object:
        self.delays.append(seconds)
        if len(self.delays) >= self.park_after:
            return stopping.wait(10)  # bounded: a stuck test ends instead of hanging
        return stopping.is_set()


async def test_empty_watches_that_end_at_once_are_backed_off() -> None:
    """A watch ending within a second with no events counts as a failure: every reconnect
    follows a backoff, and the backoffs double from the initial delay up to the cap."""
    transport = _InstantlyEndingWatches()
    pauses = _RecordedPauses(park_after=BACKOFFS)
    reflector = Reflector(transport, PODS, name="pods", pause=pauses)  # type: ignore[arg-type]
    task = asyncio.create_task(reflector.run())
    await wait_until(
        lambda: len(pauses.delays) >= BACKOFFS,
        lambda: f"{BACKOFFS} backoffs (seen {pauses.delays}, watches {transport.watches})",
    )
    reflector.stop()
    await asyncio.wait_for(task, 5)
    assert reflector.synced.is_set()
    assert transport.watches == BACKOFFS, "a watch was reopened without a backoff before it"
    backoff = reflector.policy.backoff
    bases = [min(backoff.cap, backoff.initial * backoff.factor**n) for n in range(BACKOFFS)]
    assert bases[-2:] == [backoff.cap, backoff.cap], "BACKOFFS too few to reach the cap twice"
    for n, (base, delay) in enumerate(zip(bases, pauses.delays, strict=True)):
        assert base <= delay <= base * (1 + backoff.jitter), (
            f"backoff {n} is {delay} s, not {base} s plus jitter: {pauses.delays}"
        )
