"""Fault injection: error responses, slow responses, dropped connections, outages.

An agent's retry, backoff and timeout handling only shows up when the API server misbehaves,
so tests script misbehaviour per request: the next N requests matching a method and a path
pattern fail with a status (with a proper `Status` body and optional `Retry-After`), hang for a
while (then are served normally, like a slow server whose client gave up), lose their
connection without any response, or (watches) go silent after their first events, the way a
half-open connection looks from the client's side.

Note that urllib3 (under the official client) transparently retries idempotent requests (GET,
PUT, DELETE) a few times after a dropped connection or read timeout, so a one-shot fault on
those methods may be invisible to the caller; use `times=None` or several `times` to defeat it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

Action = Literal["status", "hang", "drop", "stall"]


@dataclass
class FaultRule:
    """One scripted misbehaviour and how often it has fired."""

    action: Action
    method: str | None = None
    path_regex: re.Pattern[str] | None = None
    watch: bool | None = None
    times: int | None = 1
    status: int = 500
    retry_after: int | None = None
    message: str | None = None
    reason: str | None = None
    seconds: float = 0.0
    hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    freed: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set to end a ``hang`` early (``FaultInjector.release``, or the server stopping)."""

    @property
    def remaining(self) -> int | None:
        """How many more requests it will affect (None: unlimited)."""
        return None if self.times is None else max(0, self.times - self.hits)

    @property
    def exhausted(self) -> bool:
        """True once the rule has fired `times` times."""
        return self.times is not None and self.hits >= self.times

    def matches(self, method: str, path: str, is_watch: bool) -> bool:
        """Whether a request is in scope (does not consume the rule)."""
        if self.method is not None and self.method.upper() != method.upper():
            return False
        if self.path_regex is not None and not self.path_regex.search(path):
            return False
        return self.watch is None or self.watch == is_watch

    def consume(self) -> bool:
        """Count one hit if the rule still has one left."""
        with self._lock:
            if self.exhausted:
                return False
            self.hits += 1
            return True


def _compile(path_regex: str | re.Pattern[str] | None) -> re.Pattern[str] | None:
    if path_regex is None or isinstance(path_regex, re.Pattern):
        return path_regex
    return re.compile(path_regex)


class FaultInjector:
    """The server's fault rules; the first matching, unexhausted rule decides a request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self.released = threading.Event()  # set at server stop: hanging requests give up

    def release(self, rule: FaultRule) -> None:
        """End ``rule``'s hangs now: the requests it holds are served."""
        rule.freed.set()

    def release_all(self) -> None:
        """The server stops: every hanging request gives up."""
        self.released.set()
        with self._lock:
            for rule in self._rules:
                rule.freed.set()

    def _add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def add(
        self,
        method: str | None = None,
        path_regex: str | re.Pattern[str] | None = None,
        status: int = 500,
        times: int | None = 1,
        retry_after: int | None = None,
        *,
        message: str | None = None,
        reason: str | None = None,
        watch: bool | None = None,
    ) -> FaultRule:
        """Answer the next `times` matching requests with `status` and a `Status` body.

        `path_regex` is searched in the URL path (without the query string); `watch` restricts
        the rule to watch (True) or non-watch (False) requests; `retry_after` adds the
        `Retry-After` header and `details.retryAfterSeconds`.
        """
        return self._add(
            FaultRule(
                "status",
                method,
                _compile(path_regex),
                watch,
                times,
                status=status,
                retry_after=retry_after,
                message=message,
                reason=reason,
            )
        )

    def hang(
        self,
        method: str | None = None,
        path_regex: str | re.Pattern[str] | None = None,
        seconds: float = 5.0,
        times: int | None = 1,
        *,
        watch: bool | None = None,
    ) -> FaultRule:
        """Delay matching requests by `seconds` before serving them normally."""
        return self._add(
            FaultRule("hang", method, _compile(path_regex), watch, times, seconds=seconds)
        )

    def drop_connections(
        self,
        method: str | None = None,
        path_regex: str | re.Pattern[str] | None = None,
        times: int | None = 1,
        *,
        watch: bool | None = None,
    ) -> FaultRule:
        """Close the connection of matching requests without sending any response."""
        return self._add(FaultRule("drop", method, _compile(path_regex), watch, times))

    def stall_watches(
        self, path_regex: str | re.Pattern[str] | None = None, times: int | None = 1
    ) -> FaultRule:
        """Matching watches send their headers and initial events, then nothing at all (no
        events, no bookmarks, no end) until the client hangs up or the server stops."""
        return self._add(FaultRule("stall", "GET", _compile(path_regex), True, times))

    @contextmanager
    def outage(
        self, mode: Literal["status", "drop"] = "status", status: int = 503
    ) -> Iterator[FaultRule]:
        """Make every request fail (503 by default, or dropped connections) until exit."""
        rule = FaultRule(mode, times=None, status=status)
        with self._lock:
            self._rules.insert(0, rule)
        try:
            yield rule
        finally:
            self.remove(rule)

    def remove(self, rule: FaultRule) -> None:
        """Withdraw a rule."""
        with self._lock:
            self._rules = [r for r in self._rules if r is not rule]

    def clear(self) -> None:
        """Withdraw every rule."""
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[FaultRule]:
        """The current rules (exhausted ones included, for inspection)."""
        with self._lock:
            return list(self._rules)

    def take(self, method: str, path: str, is_watch: bool) -> list[FaultRule]:
        """The rules firing for one request: any hangs, then at most one status/drop rule."""
        with self._lock:
            candidates = [r for r in self._rules if r.matches(method, path, is_watch)]
        fired: list[FaultRule] = []
        for rule in candidates:
            if rule.action == "hang":
                if rule.consume():
                    fired.append(rule)
            elif rule.consume():
                fired.append(rule)
                break
        return fired
