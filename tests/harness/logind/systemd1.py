"""A minimal ``org.freedesktop.systemd1`` for logind to talk to on the private bus.

Without PID 1 systemd, logind's PowerOff would fail at ``StartUnit`` and its
shutdown flow (PrepareForShutdown(false) comes from ``JobRemoved``) could not be
observed. This stand-in answers the handful of Manager calls logind makes, exposes
a ``Unit`` object for any unit path asked for, turns ``KillUnit`` on
``systemd-logind.service`` into a real signal (that is how the product reloads
logind), and records every call it receives so tests can assert on them.

It lives on the harness's background loop; everything public here is synchronous
and thread-safe (``*_async`` variants exist for async tests).
"""

# No ``from __future__ import annotations`` here: dbus-fast reads the D-Bus signatures
# from the annotations, and a deferred ``-> None`` would reach it as the string "None".
import asyncio
import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from dbus_fast import BusType, DBusError, Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.annotations import (
    DBusInt32,
    DBusObjectPath,
    DBusSignature,
    DBusStr,
    DBusUInt32,
)
from dbus_fast.constants import PropertyAccess
from dbus_fast.service import ServiceInterface, dbus_method, dbus_property, signal

from tests.harness.logind.loop_thread import LoopThread
from tests.harness.logind.unit_paths import UNIT_PATH_PREFIX, job_path, unit_from_path, unit_path
from tests.harness.waiting import wait_notified

BUS_NAME = "org.freedesktop.systemd1"
MANAGER_PATH = "/org/freedesktop/systemd1"
MANAGER_INTERFACE = "org.freedesktop.systemd1.Manager"
UNIT_INTERFACE = "org.freedesktop.systemd1.Unit"
ERROR_NO_SUCH_PROCESS = "org.freedesktop.systemd1.NoSuchProcess"

_STANDARD_INTERFACES = frozenset(
    {
        "org.freedesktop.DBus.Properties",
        "org.freedesktop.DBus.Introspectable",
        "org.freedesktop.DBus.Peer",
    }
)


@dataclass(frozen=True)
class Systemd1Call:
    """One method call the stand-in received."""

    member: str
    interface: str
    path: str
    args: tuple[Any, ...]
    sender: str
    time: float  # time.monotonic() when it arrived
    handled: bool  # False: the stand-in answered UnknownMethod/UnknownObject


@dataclass(frozen=True)
class StartUnitBehaviour:
    """How ``StartUnit``/``StopUnit`` jobs behave; see :meth:`Systemd1StandIn.configure_jobs`."""

    result: str = "done"  # JobRemoved result: "done", "failed", "canceled", ...
    delay: float = 0.05  # seconds between the reply and JobRemoved
    emit_job_removed: bool = True  # False: the job never finishes
    error_name: str | None = None  # set: StartUnit replies with this D-Bus error instead
    error_message: str = "StartUnit refused by the test harness"


@dataclass
class _UnitState:
    load_state: str = "loaded"
    active_state: str = "inactive"
    sub_state: str = "dead"


class _UnitInterface(ServiceInterface):
    """``org.freedesktop.systemd1.Unit`` properties logind (or a test) may read."""

    def __init__(self, name: str, state: _UnitState) -> None:
        super().__init__(UNIT_INTERFACE)
        self._name = name
        self._state = state

    @dbus_property(access=PropertyAccess.READ)
    def Id(self) -> DBusStr:  # noqa: N802 - D-Bus member names are CamelCase
        return self._name

    @dbus_property(access=PropertyAccess.READ)
    def Names(self) -> Annotated[list[str], DBusSignature("as")]:  # noqa: N802 - D-Bus name
        return [self._name]

    @dbus_property(access=PropertyAccess.READ)
    def Description(self) -> DBusStr:  # noqa: N802 - D-Bus member name
        return f"{self._name} (systemd1 stand-in)"

    @dbus_property(access=PropertyAccess.READ)
    def LoadState(self) -> DBusStr:  # noqa: N802 - D-Bus member name
        return self._state.load_state

    @dbus_property(access=PropertyAccess.READ)
    def ActiveState(self) -> DBusStr:  # noqa: N802 - D-Bus member name
        return self._state.active_state

    @dbus_property(access=PropertyAccess.READ)
    def SubState(self) -> DBusStr:  # noqa: N802 - D-Bus member name
        return self._state.sub_state

    def state_changed(self) -> None:
        self.emit_properties_changed(
            {
                "ActiveState": self._state.active_state,
                "SubState": self._state.sub_state,
                "LoadState": self._state.load_state,
            }
        )


class _ManagerInterface(ServiceInterface):
    """``org.freedesktop.systemd1.Manager``: the calls logind makes, delegated to the owner."""

    def __init__(self, owner: "Systemd1StandIn") -> None:
        super().__init__(MANAGER_INTERFACE)
        self._owner = owner

    @dbus_method()
    def Subscribe(self) -> None:  # noqa: N802 - D-Bus member name
        return None

    @dbus_method()
    def Unsubscribe(self) -> None:  # noqa: N802 - D-Bus member name
        return None

    @dbus_method()
    def StartUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:  # noqa: N802, ARG002 - D-Bus
        return self._owner._start_job(name, "active")

    @dbus_method()
    def StopUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:  # noqa: N802, ARG002 - D-Bus
        return self._owner._start_job(name, "inactive")

    @dbus_method()
    def KillUnit(self, name: DBusStr, whom: DBusStr, signal: DBusInt32) -> None:  # noqa: N802, ARG002 - D-Bus
        self._owner._kill_unit(name, signal)

    @dbus_method()
    def GetUnit(self, name: DBusStr) -> DBusObjectPath:  # noqa: N802 - D-Bus member name
        return self._owner._ensure_unit(name)

    @dbus_method()
    def LoadUnit(self, name: DBusStr) -> DBusObjectPath:  # noqa: N802 - D-Bus member name
        return self._owner._ensure_unit(name)

    @signal()
    def JobRemoved(  # noqa: N802 - D-Bus member name
        self, job_id: DBusUInt32, job: DBusObjectPath, unit: DBusStr, result: DBusStr
    ) -> Annotated[list[Any], DBusSignature("uoss")]:
        return [job_id, job, unit, result]


class Systemd1StandIn:
    """Owns ``org.freedesktop.systemd1`` on the private bus and records what it is asked."""

    def __init__(
        self,
        loop_thread: LoopThread,
        bus_address: str,
        pid_for_unit: Callable[[str], int | None] = lambda _unit: None,
    ) -> None:
        self._loop_thread = loop_thread
        self._bus_address = bus_address
        self._pid_for_unit = pid_for_unit
        self._bus: MessageBus | None = None
        self._manager: _ManagerInterface | None = None
        self._units: dict[str, _UnitInterface] = {}
        self._unit_states: dict[str, _UnitState] = {}
        self._job_ids = itertools.count(1)
        self._behaviour = StartUnitBehaviour()
        self._calls: list[Systemd1Call] = []
        self._cond = threading.Condition()
        self._handled_members = frozenset(
            {(MANAGER_INTERFACE, m.name) for m in _ManagerInterface(self).introspect().methods}
        )

    # ---- lifecycle -----------------------------------------------------------------

    def start(self, timeout: float = 5) -> None:
        self._loop_thread.run(self._connect(), timeout)

    async def _connect(self) -> None:
        bus = MessageBus(bus_address=self._bus_address, bus_type=BusType.SYSTEM)
        await bus.connect()
        bus.add_message_handler(self._on_message)
        self._manager = _ManagerInterface(self)
        bus.export(MANAGER_PATH, self._manager)
        await bus.request_name(BUS_NAME)
        self._bus = bus

    def stop(self, timeout: float = 5) -> None:
        """Disconnect from the bus. Idempotent; safe after the loop died."""
        bus, self._bus = self._bus, None
        if bus is None:
            return

        async def _disconnect() -> None:
            bus.disconnect()

        with contextlib.suppress(RuntimeError, TimeoutError):
            self._loop_thread.run(_disconnect(), timeout)

    # ---- test-facing API (any thread) -------------------------------------------------

    def configure_jobs(
        self,
        *,
        result: str = "done",
        delay: float = 0.05,
        emit_job_removed: bool = True,
        error_name: str | None = None,
        error_message: str = StartUnitBehaviour.error_message,
    ) -> None:
        """Set how later StartUnit/StopUnit calls behave (the default: succeed, "done")."""
        behaviour = StartUnitBehaviour(result, delay, emit_job_removed, error_name, error_message)
        with self._cond:
            self._behaviour = behaviour

    def set_unit_state(
        self, unit: str, *, load_state: str | None = None, active_state: str | None = None
    ) -> None:
        """Override what the Unit object for ``unit`` reports (e.g. ``load_state="not-found"``)."""
        with self._cond:
            state = self._unit_states.setdefault(unit, _UnitState())
            if load_state is not None:
                state.load_state = load_state
            if active_state is not None:
                state.active_state = active_state
                state.sub_state = "dead" if active_state == "inactive" else active_state

    def calls(self, method: str | None = None, *, since: float | None = None) -> list[Systemd1Call]:
        """Recorded calls, oldest first; only ``method`` ones / those at or after ``since``."""
        with self._cond:
            return [c for c in self._calls if _matches(c, method, None, since)]

    def unhandled_calls(self) -> list[Systemd1Call]:
        """Calls the stand-in could not answer; non-empty means logind wanted something new."""
        with self._cond:
            return [c for c in self._calls if not c.handled]

    def clear_calls(self) -> None:
        with self._cond:
            self._calls.clear()

    def wait_for_call(
        self,
        method: str,
        predicate: Callable[[Systemd1Call], bool] | None = None,
        timeout: float = 5.0,
        *,
        since: float | None = None,
    ) -> Systemd1Call:
        """Block until a matching call has been recorded (earlier ones count); return it."""
        found = wait_notified(
            self._cond,
            lambda: next((c for c in self._calls if _matches(c, method, predicate, since)), None),
            timeout,
        )
        if found is None:
            seen = [c.member for c in self.calls()]
            raise TimeoutError(f"no {method} call within {timeout} s; calls so far: {seen}")
        return found

    async def wait_for_call_async(
        self,
        method: str,
        predicate: Callable[[Systemd1Call], bool] | None = None,
        timeout: float = 5.0,
        *,
        since: float | None = None,
    ) -> Systemd1Call:
        """:meth:`wait_for_call` without blocking the caller's event loop."""
        return await asyncio.to_thread(self.wait_for_call, method, predicate, timeout, since=since)

    # ---- bus side (loop thread only) ---------------------------------------------------

    def _on_message(self, msg: Message) -> bool:
        """Record every incoming method call; export Unit objects on first use of their path."""
        if msg.message_type is not MessageType.METHOD_CALL:
            return False
        path = msg.path or ""
        if path.startswith(UNIT_PATH_PREFIX) and (unit := unit_from_path(path)) is not None:
            self._ensure_unit(unit)
        interface = msg.interface or ""
        member = msg.member or ""
        handled = (
            interface in _STANDARD_INTERFACES
            and (path == MANAGER_PATH or path in self._exported_unit_paths())
        ) or (path == MANAGER_PATH and (interface, member) in self._handled_members)
        call = Systemd1Call(
            member=member,
            interface=interface,
            path=path,
            args=tuple(msg.body),
            sender=msg.sender or "",
            time=time.monotonic(),
            handled=handled,
        )
        with self._cond:
            self._calls.append(call)
            self._cond.notify_all()
        return False  # let dbus-fast dispatch it to the exported interfaces

    def _exported_unit_paths(self) -> set[str]:
        return {unit_path(name) for name in self._units}

    def _ensure_unit(self, unit: str) -> str:
        path = unit_path(unit)
        if unit not in self._units and self._bus is not None:
            with self._cond:
                state = self._unit_states.setdefault(unit, _UnitState())
            interface = _UnitInterface(unit, state)
            self._bus.export(path, interface)
            self._units[unit] = interface
        return path

    def _start_job(self, unit: str, target_state: str) -> str:
        with self._cond:
            behaviour = self._behaviour
        if behaviour.error_name is not None:
            raise DBusError(behaviour.error_name, behaviour.error_message)
        self._ensure_unit(unit)
        job_id = next(self._job_ids)
        job = job_path(job_id)
        if behaviour.emit_job_removed:
            loop = asyncio.get_running_loop()
            loop.call_later(
                behaviour.delay, self._finish_job, job_id, job, unit, behaviour.result, target_state
            )
        return job

    def _finish_job(self, job_id: int, job: str, unit: str, result: str, target: str) -> None:
        if self._manager is None or self._bus is None:
            return
        if result == "done":
            self.set_unit_state(unit, active_state=target)
            if (interface := self._units.get(unit)) is not None:
                interface.state_changed()
        self._manager.JobRemoved(job_id, job, unit, result)

    def _kill_unit(self, unit: str, signal_number: int) -> None:
        pid = self._pid_for_unit(unit)
        if pid is None:
            raise DBusError(ERROR_NO_SUCH_PROCESS, f"No process to kill for {unit}")
        os.kill(pid, signal_number)


def _matches(
    call: Systemd1Call,
    method: str | None,
    predicate: Callable[[Systemd1Call], bool] | None,
    since: float | None,
) -> bool:
    return (
        (method is None or call.member == method)
        and (since is None or call.time >= since)
        and (predicate is None or predicate(call))
    )


__all__ = ["BUS_NAME", "StartUnitBehaviour", "Systemd1Call", "Systemd1StandIn"]
