"""A system-bus connection with Unix fd passing, and method calls that always time out.

logind hands the inhibitor lock over as a file descriptor, so fd passing must be negotiated
at connect time. kubelet's users have seen property reads hang (kubernetes#101553), which is
why every call here is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.errors import DBusFastError

from agent.logind.errors import BusUnavailable, CallFailed, CallTimeout

SERVICE_UNKNOWN = "org.freedesktop.DBus.Error.ServiceUnknown"
NAME_HAS_NO_OWNER = "org.freedesktop.DBus.Error.NameHasNoOwner"


async def connect_system_bus(timeout: float) -> MessageBus:
    """Connect to the system bus (``DBUS_SYSTEM_BUS_ADDRESS`` is honoured) with fd passing.

    Every way this can fail is a ``LogindError``: a malformed address (dbus-fast raises
    ``InvalidAddressError``, a ``ValueError``, from the constructor), a refused socket, a
    failed authentication. The caller's reconnect loop depends on it.
    """
    bus: MessageBus | None = None
    try:
        bus = MessageBus(bus_type=BusType.SYSTEM, negotiate_unix_fd=True)
        async with asyncio.timeout(timeout):
            return await bus.connect()
    except TimeoutError as error:
        _close_quietly(bus)
        raise CallTimeout("connecting to the system bus timed out") from error
    except (OSError, EOFError, DBusFastError, ValueError) as error:
        _close_quietly(bus)
        raise BusUnavailable(f"cannot connect to the system bus: {error}") from error


def _close_quietly(bus: MessageBus | None) -> None:
    """Close a half-made connection's socket, so failed attempts leak no fds."""
    if bus is not None:
        with contextlib.suppress(Exception):
            bus.disconnect()


def close_fds(fds: list[int]) -> None:
    """Close file descriptors a message brought us; ones already gone are fine."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _close_late_fds(pending: asyncio.Future[Message]) -> None:
    if not pending.cancelled() and pending.exception() is None:
        close_fds(pending.result().unix_fds or [])


async def call(
    bus: MessageBus,
    *,
    destination: str,
    path: str,
    interface: str,
    member: str,
    signature: str = "",
    body: list[Any] | None = None,
    timeout: float,
) -> Message:
    """Call a method and return the reply; D-Bus errors become ``CallFailed``."""
    message = Message(
        destination=destination,
        path=path,
        interface=interface,
        member=member,
        signature=signature,
        body=body or [],
    )
    # The call runs as its own task, shielded from our timeout: if logind answers after we
    # gave up, the late reply may carry a file descriptor (an inhibitor lock!) that must be
    # closed, or the lock would be held, unseen, until the process exits.
    pending = asyncio.ensure_future(bus.call(message))
    try:
        async with asyncio.timeout(timeout):
            reply = await asyncio.shield(pending)
    except TimeoutError as error:
        pending.add_done_callback(_close_late_fds)
        raise CallTimeout(f"{interface}.{member} timed out after {timeout:g}s") from error
    except asyncio.CancelledError:
        pending.add_done_callback(_close_late_fds)
        raise
    except (EOFError, OSError) as error:
        raise BusUnavailable(f"bus connection lost during {member}: {error}") from error
    except Exception as error:
        # A bus that dbus-fast finalized fails its pending calls with whatever ended it (a
        # ValueError for a bad frame, say). On a dead bus that is a lost connection; on a
        # live one it is a bug of ours, and must not be disguised.
        if bus.connected:
            raise
        raise BusUnavailable(f"bus connection lost during {member}: {error!r}") from error
    if reply is None:  # pragma: no cover - only for no-reply calls, which we never make
        raise CallFailed("NoReply", f"{member} returned nothing")
    if reply.message_type is MessageType.ERROR:
        text = reply.body[0] if reply.body else ""
        raise CallFailed(reply.error_name or "unknown", str(text))
    return reply
