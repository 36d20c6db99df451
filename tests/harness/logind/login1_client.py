"""The harness's own connection to logind: calls it makes and signals it records.

Tests need to drive logind (PowerOff), read it (ListInhibitors, properties) and know
*when* it emitted PrepareForShutdown, independently of whatever connection the code
under test uses. This client lives on the harness's background loop, so signals are
recorded even while a sync test is blocked, and exposes blocking calls with timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbus_fast import BusType, DBusError, Message, MessageType
from dbus_fast.aio import MessageBus

from tests.harness.logind.loop_thread import LoopThread
from tests.harness.waiting import wait_notified, wait_until_blocking

LOGIN1_NAME = "org.freedesktop.login1"
LOGIN1_PATH = "/org/freedesktop/login1"
LOGIN1_MANAGER = "org.freedesktop.login1.Manager"
_MATCH_RULE = f"type='signal',interface='{LOGIN1_MANAGER}',path='{LOGIN1_PATH}'"


@dataclass(frozen=True)
class _Target:
    destination: str
    path: str
    interface: str


_DBUS = _Target("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
_LOGIN1 = _Target(LOGIN1_NAME, LOGIN1_PATH, LOGIN1_MANAGER)
_LOGIN1_PROPERTIES = _Target(LOGIN1_NAME, LOGIN1_PATH, "org.freedesktop.DBus.Properties")

Inhibitor = tuple[str, str, str, str, int, int]  # what, who, why, mode, uid, pid


@dataclass(frozen=True)
class Login1Signal:
    """One signal logind's Manager emitted."""

    member: str
    args: tuple[Any, ...]
    time: float  # time.monotonic() on receipt


class Login1Client:
    """A dbus-fast connection on the harness loop that talks to logind and logs its signals."""

    def __init__(self, loop_thread: LoopThread, bus_address: str) -> None:
        self._loop_thread = loop_thread
        self._bus_address = bus_address
        self._bus: MessageBus | None = None
        self._signals: list[Login1Signal] = []
        self._cond = threading.Condition()

    # ---- lifecycle -----------------------------------------------------------------

    def connect(self, timeout: float = 5) -> None:
        self._loop_thread.run(self._connect(), timeout)

    async def _connect(self) -> None:
        bus = MessageBus(bus_address=self._bus_address, bus_type=BusType.SYSTEM)
        await bus.connect()
        bus.add_message_handler(self._on_message)
        self._bus = bus
        await self._call(_DBUS, "AddMatch", "s", [_MATCH_RULE])

    def close(self, timeout: float = 5) -> None:
        bus, self._bus = self._bus, None
        if bus is None:
            return

        async def _disconnect() -> None:
            bus.disconnect()

        with contextlib.suppress(RuntimeError, TimeoutError):
            self._loop_thread.run(_disconnect(), timeout)

    # ---- calls -----------------------------------------------------------------------

    async def _call(
        self, target: _Target, member: str, signature: str = "", body: list[Any] | None = None
    ) -> list[Any]:
        if self._bus is None:
            raise RuntimeError("login1 client is not connected")
        reply = await self._bus.call(
            Message(
                destination=target.destination,
                path=target.path,
                interface=target.interface,
                member=member,
                signature=signature,
                body=body or [],
            )
        )
        if reply.message_type is MessageType.ERROR:
            text = str(reply.body[0]) if reply.body else ""
            raise DBusError(reply.error_name or "org.freedesktop.DBus.Error.Failed", text, reply)
        return list(reply.body)

    def call_login1(
        self, member: str, signature: str = "", body: list[Any] | None = None, timeout: float = 5
    ) -> list[Any]:
        """Call a method on ``org.freedesktop.login1.Manager`` and return the reply body."""
        coro = self._call(_LOGIN1, member, signature, body)
        return self._loop_thread.run(coro, timeout)

    def get_property(self, name: str, timeout: float = 5) -> Any:
        coro = self._call(_LOGIN1_PROPERTIES, "Get", "ss", [LOGIN1_MANAGER, name])
        return self._loop_thread.run(coro, timeout)[0].value

    def name_owner(self, name: str = LOGIN1_NAME, timeout: float = 2) -> str | None:
        """Unique name currently owning ``name``, or ``None``."""
        coro = self._call(_DBUS, "GetNameOwner", "s", [name])
        try:
            return str(self._loop_thread.run(coro, timeout)[0])
        except DBusError:
            return None

    def wait_for_owner(
        self,
        timeout: float,
        *,
        not_owner: str | None = None,
        still_alive: Callable[[], bool] = lambda: True,
    ) -> str:
        """Poll until login1 is owned (by someone other than ``not_owner``); return the owner."""

        def new_owner() -> str | None:
            owner = self.name_owner()
            if owner is not None and owner != not_owner:
                return owner
            if not still_alive():
                raise RuntimeError("systemd-logind exited before it owned org.freedesktop.login1")
            return None

        owner = wait_until_blocking(
            new_owner, f"systemd-logind to own {LOGIN1_NAME}", timeout, interval=0.02
        )
        return str(owner)

    # ---- signals ---------------------------------------------------------------------

    def _on_message(self, msg: Message) -> bool:
        if (
            msg.message_type is MessageType.SIGNAL
            and msg.interface == LOGIN1_MANAGER
            and msg.path == LOGIN1_PATH
            and msg.member
        ):
            record = Login1Signal(msg.member, tuple(msg.body), time.monotonic())
            with self._cond:
                self._signals.append(record)
                self._cond.notify_all()
        return False

    def signals(
        self, member: str | None = None, *, since: float | None = None
    ) -> list[Login1Signal]:
        with self._cond:
            return [s for s in self._signals if _matches(s, member, None, since)]

    def wait_for_signal(
        self,
        member: str,
        predicate: Callable[[Login1Signal], bool] | None = None,
        timeout: float = 5.0,
        *,
        since: float | None = None,
    ) -> Login1Signal:
        """Block until a matching signal has been recorded (earlier ones count); return it."""
        found = wait_notified(
            self._cond,
            lambda: next((s for s in self._signals if _matches(s, member, predicate, since)), None),
            timeout,
        )
        if found is None:
            seen = [(s.member, s.args) for s in self.signals()]
            raise TimeoutError(f"no matching {member} within {timeout} s; got {seen}")
        return found

    async def wait_for_signal_async(
        self,
        member: str,
        predicate: Callable[[Login1Signal], bool] | None = None,
        timeout: float = 5.0,  # a worker thread does the bounded wait
        *,
        since: float | None = None,
    ) -> Login1Signal:
        return await asyncio.to_thread(
            self.wait_for_signal, member, predicate, timeout, since=since
        )


def _matches(
    record: Login1Signal,
    member: str | None,
    predicate: Callable[[Login1Signal], bool] | None,
    since: float | None,
) -> bool:
    return (
        (member is None or record.member == member)
        and (since is None or record.time >= since)
        and (predicate is None or predicate(record))
    )
