"""The request log: what the agent under test actually sent, for assertions.

Behavioural tests often need to pin the wire-level conversation ("it evicted with grace 30",
"it retried after the 503", "it never PUT the node"), so every HTTP request is recorded with
its parsed body and final status, and tests can filter or block until a request shows up.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..waiting import wait_notified

# How long a query of the log waits for requests still being processed to get their status.
SETTLE_SECONDS = 2.0


@dataclass
class RecordedRequest:
    """One HTTP request as the fake saw it."""

    monotonic: float
    wall_time: float
    method: str
    path: str
    query: dict[str, str | list[str]]
    body: Any
    content_type: str | None
    headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None  # None: no response was sent (dropped connection) or in flight
    response_bytes: int = 0  # body bytes sent so far (a watch: every chunk, as it streams)
    in_flight: bool = field(default=True, repr=False)

    def header(self, name: str, default: str | None = None) -> str | None:
        """A request header, looked up case-insensitively."""
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return default

    @property
    def is_watch(self) -> bool:
        """Whether this was a watch request."""
        return str(self.query.get("watch", "")).lower() in ("true", "1") or "/watch/" in self.path


Predicate = Callable[[RecordedRequest], bool]
Observer = Callable[[RecordedRequest], None]

_observers: list[Observer] = []
"""Called with every request any server's log records (the whole session's, not one test's)."""


def observe_every_server(observer: Observer) -> Callable[[], None]:
    """Have ``observer`` see each request every fake API server records from now on, as it
    arrives (before its status is known); returns the function that stops it. The RBAC proof
    (tests/harness/rbac) collects a whole session's requests this way."""
    _observers.append(observer)
    return lambda: _observers.remove(observer)


class RequestLog:
    """Thread-safe append-only list of `RecordedRequest`s with waiting."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._entries: list[RecordedRequest] = []

    def record(self, entry: RecordedRequest) -> RecordedRequest:
        """Append an entry (its status is filled in when the response is sent)."""
        with self._cond:
            self._entries.append(entry)
            self._cond.notify_all()
        for observer in tuple(_observers):
            observer(entry)
        return entry

    def completed(self, entry: RecordedRequest, status: int | None) -> None:
        """Set the response status of an entry and wake waiters."""
        with self._cond:
            entry.status = status
            entry.in_flight = False
            self._cond.notify_all()

    @contextmanager
    def hanging(self, entry: RecordedRequest) -> Iterator[None]:
        """While a fault delays `entry` on purpose, queries do not wait for its status."""
        with self._cond:
            entry.in_flight = False
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                entry.in_flight = entry.status is None

    def _settled(self) -> list[RecordedRequest]:
        """All entries, after waiting (briefly) for requests being processed to complete."""
        deadline = time.monotonic() + SETTLE_SECONDS
        with self._cond:
            while any(e.in_flight for e in self._entries):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return list(self._entries)

    def clear(self) -> None:
        """Forget every entry."""
        with self._cond:
            self._entries.clear()

    def filter(
        self,
        method: str | None = None,
        path_contains: str | None = None,
        path_regex: str | None = None,
        status: int | None = None,
        predicate: Predicate | None = None,
    ) -> list[RecordedRequest]:
        """Entries matching every given criterion, oldest first.

        Requests still being processed are waited for (up to SETTLE_SECONDS), so an entry's
        status is final unless its connection was dropped or a fault holds it.
        """
        pattern = re.compile(path_regex) if path_regex else None
        entries = self._settled()
        return [
            e
            for e in entries
            if (method is None or e.method == method.upper())
            and (path_contains is None or path_contains in e.path)
            and (pattern is None or pattern.search(e.path))
            and (status is None or e.status == status)
            and (predicate is None or predicate(e))
        ]

    def wait_for(self, predicate: Predicate, timeout: float = 5.0) -> RecordedRequest:
        """Block until a request satisfying `predicate` was recorded; TimeoutError otherwise."""
        entry = wait_notified(
            self._cond, lambda: next((e for e in self._entries if predicate(e)), None), timeout
        )
        if entry is None:
            raise TimeoutError(f"no matching request within {timeout} s")
        return entry
