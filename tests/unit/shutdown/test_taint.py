"""The taint keeper: newest wish wins, without cancelling a write that is already on the wire."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agent.kube.backoff import Backoff
from agent.kube.errors import Forbidden
from agent.kube.patches import Builder
from agent.shutdown.taint import SHUTTING_DOWN, TaintKeeper
from tests.harness.waiting import wait_until

FAST = Backoff(initial=0.001, factor=1.0, cap=0.001, jitter=0.0)
UNTAINTED: dict[str, Any] = {"metadata": {"resourceVersion": "1"}, "spec": {}}
TAINTED: dict[str, Any] = {
    "metadata": {"resourceVersion": "2"},
    "spec": {"taints": [{"key": SHUTTING_DOWN.key, "effect": "NoSchedule"}]},
}


class SlowPatcher:
    """A NodePatcher double: the first update blocks until released, like a hung PATCH."""

    def __init__(self, *, hang_first: bool = True) -> None:
        self.hang_first = hang_first
        self.gate = asyncio.Event()
        self.calls: list[tuple[str, dict[str, Any] | None, list[Any]]] = []
        self.cancelled: list[str] = []
        self.wire: list[str] = []
        """What happened on the wire, in order: ``sent <what>``, ``answered <what>``."""
        self.stored = UNTAINTED

    async def update(
        self,
        build: Builder,
        *,
        what: str,
        node: dict[str, Any] | None = None,
        deadline: float | None = None,  # noqa: ARG002 - NodePatcher's signature
    ) -> dict[str, Any]:
        current = self.stored if node is None else node
        ops = build(current)
        self.calls.append((what, node, ops))
        self.wire.append(f"sent {what}")
        if self.hang_first and len(self.calls) == 1:  # the first write hangs on the wire
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled.append(what)
                raise
        if ops:  # what the API server does with it, cancelled or not
            self.stored = TAINTED if "add" in what else UNTAINTED
        self.wire.append(f"answered {what}")
        return self.stored


async def test_a_newer_wish_waits_for_the_write_in_flight_and_reads_afresh() -> None:
    """want(False) during a hung add does not cancel it, then decides on a fresh GET."""
    patcher = SlowPatcher()
    keeper = TaintKeeper(patcher, lambda: UNTAINTED, monotonic=time.monotonic, backoff=FAST)  # type: ignore[arg-type]
    keeper.want(True)
    await wait_until(lambda: patcher.calls, "the add on the wire")
    removal = keeper.want(False)
    # The removal task's first step is queued now, the add's answer only by ``set``: the
    # loop runs them in that order, so the removal has had its chance to race ahead (or a
    # cancel of the add its chance to land) before the add is answered.
    patcher.gate.set()
    assert await asyncio.wait_for(removal, 2) is True
    assert patcher.cancelled == []
    assert patcher.wire == [  # the removal waited for the add's answer
        "sent add shutting-down taint",
        "answered add shutting-down taint",
        "sent remove shutting-down taint",
        "answered remove shutting-down taint",
    ]
    what, node, ops = patcher.calls[-1]
    assert what == "remove shutting-down taint"
    assert node is None  # a fresh read, not the cache that predates our own add
    assert ops
    assert patcher.stored is UNTAINTED


async def test_a_superseded_wish_sends_nothing_more() -> None:
    """A wish overtaken before its write is built sends no operations of its own."""
    patcher = SlowPatcher(hang_first=False)
    keeper = TaintKeeper(patcher, lambda: UNTAINTED, monotonic=time.monotonic, backoff=FAST)  # type: ignore[arg-type]
    keeper.want(True)
    keeper.want(False)  # before the add task even ran
    assert await asyncio.wait_for(keeper.wait(), 2) is True
    assert [ops for what, _, ops in patcher.calls if "add" in what and ops] == []
    assert patcher.stored is UNTAINTED


class ForbiddenPatcher:
    """Refuses every write (RBAC), until ``allow`` is set."""

    def __init__(self) -> None:
        self.attempts = 0
        self.allow = False

    async def update(self, build: Builder, **_: Any) -> dict[str, Any]:
        self.attempts += 1
        if not self.allow:
            raise Forbidden("nodes is forbidden", status=403)
        build(TAINTED)
        return UNTAINTED


async def test_removal_that_keeps_failing_reports_trouble_and_keeps_trying() -> None:
    """Repeated failures without a deadline mark the agent degraded; success clears it."""
    patcher = ForbiddenPatcher()
    trouble: list[str | None] = []
    keeper = TaintKeeper(
        patcher,  # type: ignore[arg-type]
        lambda: TAINTED,
        monotonic=time.monotonic,
        backoff=FAST,
        on_trouble=trouble.append,
        trouble_after=3,
    )
    task = keeper.want(False)
    await wait_until(lambda: trouble, "trouble reported", 5, interval=0.005)
    assert trouble[0] is not None
    assert "forbidden" in trouble[0]
    assert patcher.attempts >= 3
    assert not task.done()  # still retrying
    patcher.allow = True
    assert await asyncio.wait_for(task, 2) is True
    assert trouble[-1] is None
    assert None not in trouble[:-1]
