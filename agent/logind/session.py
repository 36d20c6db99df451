"""A system-bus connection to logind that comes back by itself, and reports what happened.

The inhibitor lock is an fd and does not depend on the bus connection, but the signals
do: a dropped connection (dbus-daemon restarted, socket closed) would leave the agent
deaf to the next ``PrepareForShutdown``. ``run`` keeps one connection alive, reconnects
with backoff, and turns everything worth reacting to into events on one queue:

- ``BusConnected``: a (new) connection is subscribed; the owner of the lock should check
  with ``ListInhibitors`` that its lock is still there;
- ``BusLost``: the connection dropped or could not be made (the reason says which);
- ``LogindOwnerChanged``: logind left the bus or came back (a restart);
- ``PrepareForShutdown``: logind's signal, from the real logind only, stamped with the
  time it was received: the queue may hold it while an earlier event is handled, and the
  shutdown's deadlines must count from the signal, not from when it was handled.

``run`` must never end by itself: whatever a connection fails with (dbus-fast finalizes a
bus with a ``ValueError`` on a bad frame, for instance), it is reported as ``BusLost`` and
the loop reconnects. The controller still supervises the task, as a last line.

Concurrency: everything here runs on the event loop; the queue is the only hand-off.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from dbus_fast.aio import MessageBus

from agent.logind.bus import call, connect_system_bus
from agent.logind.errors import LogindError
from agent.logind.manager import LogindManager
from agent.logind.signals import DBUS, DBUS_PATH, LogindSignals
from agent.retrying import Backoff, RetryPolicy

_log = structlog.get_logger(subsystem="logind.session")


@dataclass(frozen=True)
class PrepareForShutdown:
    active: bool
    monotonic: float
    """When the signal was received, on the session's monotonic clock."""
    wall: float
    """The same moment in Unix seconds."""


@dataclass(frozen=True)
class LogindOwnerChanged:
    owner: str | None
    """logind's new unique name; ``None`` while logind is off the bus."""


@dataclass(frozen=True)
class BusConnected:
    logind_present: bool


@dataclass(frozen=True)
class BusLost:
    reason: str


LogindEvent = PrepareForShutdown | LogindOwnerChanged | BusConnected | BusLost


class LogindSession:
    def __init__(
        self,
        *,
        call_timeout: float,
        reconnect_initial: float = 0.25,
        reconnect_cap: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.call_timeout = call_timeout
        self.reconnect_initial = reconnect_initial
        self.reconnect_cap = reconnect_cap
        self.monotonic = monotonic
        self.now = now
        self.events: asyncio.Queue[LogindEvent] = asyncio.Queue()
        self.bus: MessageBus | None = None
        self.manager: LogindManager | None = None
        self.own_pid = os.getpid()
        """Our pid as logind sees it (it differs from ``os.getpid()`` in a pid namespace)."""
        self._signals: LogindSignals | None = None

    @property
    def connected(self) -> bool:
        return self.manager is not None

    async def run(self) -> None:
        """Connect, subscribe, wait for the connection to drop, repeat. Runs until cancelled."""
        failures = 0
        while True:
            bus: MessageBus | None = None
            try:
                bus = await connect_system_bus(self.call_timeout)
                await self._attach(bus)
                failures = 0
                await bus.wait_for_disconnect()  # type: ignore[no-untyped-call]  # dbus-fast leaves it unannotated
                reason = "the system bus connection closed"
            except LogindError as error:
                reason = str(error) if bus is None else f"cannot subscribe to logind: {error}"
                failures += 1
            except (EOFError, OSError) as error:  # a socket dropped mid-call
                reason = f"the system bus connection broke: {error}"
                failures += 1
            except Exception as error:  # noqa: BLE001 - whatever dbus-fast ended the bus with: reconnect, never die
                _log.warning("the system bus connection failed unexpectedly", error=repr(error))
                reason = f"the system bus connection failed: {error!r}"
                failures += 1
            finally:
                if bus is not None:
                    self._detach(bus)
            self.events.put_nowait(BusLost(reason))
            await asyncio.sleep(self._delay(max(failures, 1)))

    def _delay(self, failures: int) -> float:
        # Built per use: tests widen ``reconnect_initial`` on a running session. No jitter:
        # the peer is this node's own dbus-daemon, not a server shared with other agents.
        backoff = Backoff(initial=self.reconnect_initial, cap=self.reconnect_cap, jitter=0.0)
        return RetryPolicy(backoff).wait(failures)

    async def _attach(self, bus: MessageBus) -> None:
        signals = LogindSignals(
            bus,
            on_prepare_for_shutdown=lambda active: self.events.put_nowait(
                PrepareForShutdown(active, monotonic=self.monotonic(), wall=self.now())
            ),
            on_owner_changed=lambda owner: self.events.put_nowait(LogindOwnerChanged(owner)),
        )
        self._signals = signals
        await signals.subscribe(self.call_timeout)
        self.own_pid = await self._pid_on_bus(bus)
        self.bus = bus
        self.manager = LogindManager(bus, self.call_timeout)
        self.events.put_nowait(BusConnected(logind_present=signals.owner is not None))

    def _detach(self, bus: MessageBus) -> None:
        if self._signals is not None:
            self._signals.close()
            self._signals = None
        self.bus = None
        self.manager = None
        bus.disconnect()

    async def _pid_on_bus(self, bus: MessageBus) -> int:
        """Ask the bus daemon which pid it sees for us: the pid logind records with our lock."""
        try:
            reply = await call(
                bus,
                destination=DBUS,
                path=DBUS_PATH,
                interface=DBUS,
                member="GetConnectionUnixProcessID",
                signature="s",
                body=[bus.unique_name],
                timeout=self.call_timeout,
            )
        except LogindError as error:
            _log.warning("cannot learn our pid on the bus; using our own", error=str(error))
            return os.getpid()
        return int(reply.body[0])

    def close(self) -> None:
        bus = self.bus
        if bus is not None:
            self._detach(bus)
