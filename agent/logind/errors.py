"""logind errors of our own, so ``dbus_fast`` exceptions never leak past this adapter."""

from __future__ import annotations


class LogindError(Exception):
    """A logind or bus operation failed."""


class BusUnavailable(LogindError):
    """The system bus cannot be reached (no socket, refused, or dropped)."""


class CallTimeout(LogindError):
    """A D-Bus call did not answer within its timeout."""


class CallFailed(LogindError):
    """The peer answered with a D-Bus error (e.g. logind is not running)."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        super().__init__(f"{name}: {text}")
