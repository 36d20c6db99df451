"""Health state behind ``/healthz`` and ``/readyz``.

``/healthz`` answers "is the process working": it fails when a supervised root task died
and could not be restarted. ``/readyz`` answers "is the agent's view current": every
registered readiness condition (a watch that has synced, node facts sampled) must be true.
Writers are event-loop tasks and watch threads; readers are HTTP threads; one lock covers it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class HealthReport:
    ok: bool
    checks: dict[str, bool]


class Health:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: dict[str, bool] = {}
        self._failures: dict[str, str] = {}
        self._degraded: dict[str, str] = {}

    def expect(self, name: str) -> None:
        """Declare a readiness condition that starts out false."""
        with self._lock:
            self._ready.setdefault(name, False)

    def set_ready(self, name: str, ready: bool = True) -> None:
        with self._lock:
            self._ready[name] = ready

    def set_failed(self, name: str, reason: str) -> None:
        with self._lock:
            self._failures[name] = reason

    def clear_failed(self, name: str) -> None:
        with self._lock:
            self._failures.pop(name, None)

    def set_degraded(self, name: str, reason: str | None) -> None:
        """Degraded is reported but does not fail a probe: the agent still does its job."""
        with self._lock:
            if reason is None:
                self._degraded.pop(name, None)
            else:
                self._degraded[name] = reason

    def liveness(self) -> HealthReport:
        with self._lock:
            checks = dict.fromkeys(self._failures, False)
            return HealthReport(ok=not self._failures, checks=checks)

    def readiness(self) -> HealthReport:
        with self._lock:
            checks = dict(self._ready)
        return HealthReport(ok=all(checks.values()), checks=checks)

    def degraded(self) -> dict[str, str]:
        with self._lock:
            return dict(self._degraded)
