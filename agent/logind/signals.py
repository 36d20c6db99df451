"""logind's signals that matter for shutdown: ``PrepareForShutdown`` and logind's own restarts.

Any peer on the system bus may emit a signal that *looks* like logind's (same path,
interface and member), and the bus daemon delivers broadcast signals to every connection
whose match rules fit. So the match rules name the sender, and every signal is checked
here against the unique name that currently owns ``org.freedesktop.login1``: a forged
``PrepareForShutdown`` must not make the agent delete every pod on the node. The owner is
learnt with ``GetNameOwner`` and kept current from ``NameOwnerChanged``, which the bus
daemon itself sends (and which is how a logind restart shows up).

With fd passing on, any peer can also attach file descriptors to a message for us (the
default system-bus policy lets anyone send signals to anyone), and dbus-fast leaves them
open in the message. So the handler, which sees every message first, closes the fds of
every message except a method reply that one of our ``call``s waits for (the caller owns
those: ``Inhibit`` keeps its lock fd, ``call`` closes a late reply's). Otherwise a local
client could exhaust the agent's fds, one signal at a time.

Concurrency: dbus-fast calls the handler on the event loop thread, so the owner field and
the callbacks need no lock.
"""

from __future__ import annotations

from collections.abc import Callable

from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus

from agent.logind.bus import NAME_HAS_NO_OWNER, call, close_fds
from agent.logind.errors import CallFailed
from agent.logind.manager import LOGIN1, LOGIN1_PATH, MANAGER

DBUS = "org.freedesktop.DBus"
DBUS_PATH = "/org/freedesktop/DBus"

PREPARE_FOR_SHUTDOWN_RULE = (
    f"type='signal',sender='{LOGIN1}',path='{LOGIN1_PATH}',"
    f"interface='{MANAGER}',member='PrepareForShutdown'"
)
LOGIN1_OWNER_RULE = (
    f"type='signal',sender='{DBUS}',path='{DBUS_PATH}',interface='{DBUS}',"
    f"member='NameOwnerChanged',arg0='{LOGIN1}'"
)


class LogindSignals:
    """Subscribes one bus connection and reports verified signals through two callbacks."""

    def __init__(
        self,
        bus: MessageBus,
        *,
        on_prepare_for_shutdown: Callable[[bool], None],
        on_owner_changed: Callable[[str | None], None],
    ) -> None:
        self.bus = bus
        self.owner: str | None = None
        self._on_prepare = on_prepare_for_shutdown
        self._on_owner = on_owner_changed
        self._owner_updates = 0

    async def subscribe(self, timeout: float) -> None:
        """Add the match rules, then learn logind's current unique name."""
        self.bus.add_message_handler(self._handle)
        for rule in (PREPARE_FOR_SHUTDOWN_RULE, LOGIN1_OWNER_RULE):
            await call(
                self.bus,
                destination=DBUS,
                path=DBUS_PATH,
                interface=DBUS,
                member="AddMatch",
                signature="s",
                body=[rule],
                timeout=timeout,
            )
        updates_before = self._owner_updates
        owner = await self._current_owner(timeout)
        # A NameOwnerChanged that arrived while we asked is newer than the answer.
        if self._owner_updates == updates_before:
            self.owner = owner

    def close(self) -> None:
        self.bus.remove_message_handler(self._handle)

    async def _current_owner(self, timeout: float) -> str | None:
        try:
            reply = await call(
                self.bus,
                destination=DBUS,
                path=DBUS_PATH,
                interface=DBUS,
                member="GetNameOwner",
                signature="s",
                body=[LOGIN1],
                timeout=timeout,
            )
        except CallFailed as error:
            if error.name == NAME_HAS_NO_OWNER:
                return None
            raise
        return str(reply.body[0])

    def _handle(self, message: Message) -> bool:
        if message.unix_fds and not self._awaited_reply(message):
            close_fds(message.unix_fds)
        if message.message_type is not MessageType.SIGNAL:
            return False
        if (
            message.member == "NameOwnerChanged"
            and message.sender == DBUS
            and message.interface == DBUS
            and message.body
            and message.body[0] == LOGIN1
        ):
            self._owner_updates += 1
            self.owner = str(message.body[2]) or None
            self._on_owner(self.owner)
        elif (
            message.member == "PrepareForShutdown"
            and message.interface == MANAGER
            and message.path == LOGIN1_PATH
            and self.owner is not None
            and message.sender == self.owner
            and message.body
        ):
            self._on_prepare(bool(message.body[0]))
        return False

    def _awaited_reply(self, message: Message) -> bool:
        """A reply (or error) to a call of ours still in flight: its fds are the caller's.

        dbus-fast keeps the handlers of pending calls by serial in ``_method_return_handlers``
        and runs user handlers (this one) before it delivers the reply, so the entry is still
        there. A reply nobody waits for is dropped by dbus-fast, fds and all.
        """
        if message.message_type not in (MessageType.METHOD_RETURN, MessageType.ERROR):
            return False
        return message.reply_serial in self.bus._method_return_handlers
