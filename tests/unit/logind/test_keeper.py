"""The lock keeper: one lock at most, kept while logind lists it, re-taken only when lost."""

from __future__ import annotations

import os
import threading

import pytest

from agent.logind.errors import CallFailed
from agent.logind.keeper import LockKeeper
from agent.logind.manager import Inhibitor, InhibitorLock

PID = 4242
WHO = "kubelet-companion"


def fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class FakeLogind:
    """Hands out real pipe fds as locks and lists the ones still open, as logind does."""

    def __init__(self) -> None:
        self.taken: list[InhibitorLock] = []
        self.fds: list[int] = []
        self.lost = False
        self.others: list[Inhibitor] = []
        self.gate: threading.Event | None = None

    async def inhibit(self, what: str, who: str, why: str, mode: str) -> InhibitorLock:  # noqa: ARG002 - logind's signature
        read_end, write_end = os.pipe()
        os.close(read_end)
        lock = InhibitorLock(write_end, what, who)
        self.taken.append(lock)
        self.fds.append(write_end)
        return lock

    async def list_inhibitors(self) -> list[Inhibitor]:
        ours = [
            Inhibitor("shutdown", WHO, "why", "delay", 0, PID)
            for lock in self.taken
            if lock.held and not self.lost
        ]
        return ours + self.others

    def open_locks(self) -> int:
        return sum(1 for lock in self.taken if lock.held)


async def test_first_ensure_takes_one_lock() -> None:
    """With no lock, ensure takes one delay lock for shutdown."""
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w")
    result = await keeper.ensure(logind, PID)
    assert result.action == "taken"
    assert keeper.held
    assert logind.open_locks() == 1


async def test_listed_lock_is_kept_not_replaced() -> None:
    """A lock logind still lists (e.g. restored after a logind restart) is kept."""
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w")
    await keeper.ensure(logind, PID)
    result = await keeper.ensure(logind, PID)
    assert result.action == "kept"
    assert len(logind.taken) == 1


async def test_lost_lock_is_replaced_and_the_old_fd_closed() -> None:
    """When logind no longer lists our lock, a new one is taken and the old fd is closed."""
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w")
    await keeper.ensure(logind, PID)
    old_fd = logind.fds[0]
    logind.lost = True
    result = await keeper.ensure(logind, PID)
    assert result.action == "taken"
    assert len(logind.taken) == 2
    assert not fd_open(old_fd)
    assert logind.open_locks() == 1


async def test_another_process_lock_with_our_name_is_not_ours() -> None:
    """A lock with our ``who`` but another pid does not count as ours."""
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w")
    logind.others = [Inhibitor("shutdown", WHO, "w", "delay", 0, PID + 1)]
    result = await keeper.ensure(logind, PID)
    assert result.action == "taken"


async def test_release_closes_and_stops_wanting() -> None:
    """After release the fd is closed and ensure takes nothing until want() is called."""
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w")
    await keeper.ensure(logind, PID)
    assert keeper.release() is True
    assert not fd_open(logind.fds[0])
    assert (await keeper.ensure(logind, PID)).action == "not-wanted"
    assert keeper.release() is False  # idempotent
    keeper.want()
    assert (await keeper.ensure(logind, PID)).action == "taken"
    assert logind.open_locks() == 1


async def test_release_during_inhibit_wins() -> None:
    """A lock that arrives after a release (from another thread) is closed at once."""

    class SlowLogind(FakeLogind):
        async def inhibit(self, what: str, who: str, why: str, mode: str) -> InhibitorLock:
            keeper.release()  # the watchdog fires while Inhibit is in flight
            return await super().inhibit(what, who, why, mode)

    logind = SlowLogind()
    keeper = LockKeeper(who=WHO, why="w")
    await keeper.ensure(logind, PID)
    assert not keeper.held
    assert logind.open_locks() == 0


async def test_on_change_reports_held_state() -> None:
    """The keeper reports each change of the held state (for the gauge and /readyz)."""
    seen: list[bool] = []
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w", on_change=seen.append)
    await keeper.ensure(logind, PID)
    keeper.release()
    assert seen == [True, False]


async def test_inhibit_failure_propagates_and_holds_nothing() -> None:
    """A refused Inhibit raises to the caller and leaves no lock behind."""

    class Refusing(FakeLogind):
        async def inhibit(self, what: str, who: str, why: str, mode: str) -> InhibitorLock:  # noqa: ARG002 - logind's signature
            raise CallFailed("org.freedesktop.login1.OperationInProgress", "busy")

    keeper = LockKeeper(who=WHO, why="w")
    with pytest.raises(CallFailed):
        await keeper.ensure(Refusing(), PID)
    assert not keeper.held


async def test_other_inhibitors_are_reported() -> None:
    """ensure returns what logind listed, so the caller can spot kubelet's lock."""
    logind, keeper = FakeLogind(), LockKeeper(who=WHO, why="w")
    kubelet = Inhibitor("shutdown", "kubelet", "Kubelet needs time", "delay", 0, 1)
    logind.others = [kubelet]
    result = await keeper.ensure(logind, PID)
    assert kubelet in result.inhibitors
