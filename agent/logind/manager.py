"""``org.freedesktop.login1.Manager``: properties, inhibitor locks and their listing.

The lock itself is a file descriptor: logind keeps the lock while any copy of it is open.
Whoever holds an ``InhibitorLock`` owns exactly one fd and must ``close`` it exactly once.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from dbus_fast import Message
from dbus_fast.aio import MessageBus
from dbus_fast.signature import Variant

from agent.logind.bus import call, close_fds
from agent.logind.errors import CallFailed

LOGIN1 = "org.freedesktop.login1"
LOGIN1_PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"
PROPERTIES = "org.freedesktop.DBus.Properties"
USEC_PER_SECOND = 1_000_000
"""logind counts ``InhibitDelayMaxUSec`` in microseconds; its drop-in setting is in seconds."""
SHUTDOWN = "shutdown"
"""The ``what`` of a lock on shutdown (a lock's ``what`` is a colon-separated list)."""
DELAY = "delay"
"""The ``mode`` of a lock that delays the operation, up to ``InhibitDelayMaxSec``."""


@dataclass(frozen=True)
class Inhibitor:
    what: str
    who: str
    why: str
    mode: str
    uid: int
    pid: int

    @property
    def delays_shutdown(self) -> bool:
        """A delay lock on shutdown: the kind we hold, and kubelet would."""
        return SHUTDOWN in self.what.split(":") and self.mode == DELAY


class InhibitorLock:
    """One inhibitor fd. ``close`` is idempotent and thread-safe."""

    def __init__(self, fd: int, what: str, who: str) -> None:
        self._fd: int | None = fd
        self._lock = threading.Lock()
        self.what = what
        self.who = who

    @property
    def held(self) -> bool:
        return self._fd is not None

    def close(self) -> bool:
        """Release the lock. Returns whether this call was the one that released it."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is None:
            return False
        os.close(fd)
        return True


class LogindManager:
    """Calls on logind's Manager object over an already connected bus."""

    def __init__(self, bus: MessageBus, timeout: float) -> None:
        self.bus = bus
        self.timeout = timeout

    async def _call(
        self, interface: str, member: str, signature: str = "", body: list[Any] | None = None
    ) -> Message:
        return await call(
            self.bus,
            destination=LOGIN1,
            path=LOGIN1_PATH,
            interface=interface,
            member=member,
            signature=signature,
            body=body,
            timeout=self.timeout,
        )

    async def get_property(self, name: str) -> object:
        reply = await self._call(PROPERTIES, "Get", "ss", [MANAGER, name])
        variant = reply.body[0]
        return variant.value if isinstance(variant, Variant) else variant

    async def inhibit_delay_max_usec(self) -> int:
        return int(str(await self.get_property("InhibitDelayMaxUSec")))

    async def inhibit(self, what: str, who: str, why: str, mode: str) -> InhibitorLock:
        reply = await self._call(MANAGER, "Inhibit", "ssss", [what, who, why, mode])
        index = reply.body[0]
        fds = reply.unix_fds or []
        # dbus-fast hands us every fd in the message; keep the one named, close any others.
        fd = fds[index] if isinstance(index, int) and index < len(fds) else None
        close_fds([other for other in fds if other != fd])
        if fd is None:
            raise CallFailed("NoFd", "Inhibit returned no file descriptor (fd passing off?)")
        return InhibitorLock(fd, what, who)

    async def list_inhibitors(self) -> list[Inhibitor]:
        reply = await self._call(MANAGER, "ListInhibitors")
        return [
            Inhibitor(str(w), str(who), str(why), str(mode), int(uid), int(pid))
            for w, who, why, mode, uid, pid in reply.body[0]
        ]
