"""The status board: what one capability's state the NodeReport must carry, published once.

Capabilities must not import each other, yet the report needs the readiness gate, the
shutdown and the swap audit. So each of those controllers publishes a small, plain value
here at its state changes (one call each), and the report controller subscribes: a change
wakes the report writer at once, so a gate lift or a shutdown start reaches the API server
within a second instead of waiting for the next sample or heartbeat.

Concurrency: the board is used from the event loop thread only (controllers publish from
the loop, subscribers are called synchronously on it), so it needs no lock. Subscribers
must be quick and must not publish (they typically set an ``asyncio.Event``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import structlog

_log = structlog.get_logger(subsystem="status")

ShutdownState = Literal["none", "inProgress", "completed"]


@dataclass(frozen=True)
class ReadinessStatus:
    gate_held: bool
    waiting_for: tuple[str, ...] = ()
    """``daemonset:<name>``, ``pod:<name>``, ``csi:<driver>`` the gate still waits for."""


@dataclass(frozen=True)
class ShutdownStatus:
    state: ShutdownState = "none"
    start_time: float | None = None
    """Unix seconds when the shutdown began."""
    phase_priority: int | None = None
    """The priority bucket whose pods are being terminated now."""
    budget_end: float | None = None
    """Unix seconds when the lock is released whatever happens."""


@dataclass(frozen=True)
class SwapStatus:
    behavior: str
    cgroup_v2: bool
    noswap_supported: bool
    drifted: tuple[str, ...] = ()
    """``namespace/pod/container`` of every container whose swap limit drifted."""


@dataclass(frozen=True)
class BoardSnapshot:
    readiness: ReadinessStatus | None = None
    shutdown: ShutdownStatus | None = None
    swap: SwapStatus | None = None
    version: int = 0
    """Bumped on every change; equal versions mean equal contents."""


Subscriber = Callable[[BoardSnapshot], None]


@dataclass
class StatusBoard:
    """The latest published value of each capability; subscribers hear about changes."""

    _current: BoardSnapshot = field(default_factory=BoardSnapshot)
    _subscribers: list[Subscriber] = field(default_factory=list)

    def snapshot(self) -> BoardSnapshot:
        return self._current

    def publish_readiness(self, status: ReadinessStatus) -> None:
        self._replace(readiness=status)

    def publish_shutdown(self, status: ShutdownStatus) -> None:
        self._replace(shutdown=status)

    def publish_swap(self, status: SwapStatus) -> None:
        self._replace(swap=status)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def _replace(
        self,
        *,
        readiness: ReadinessStatus | None = None,
        shutdown: ShutdownStatus | None = None,
        swap: SwapStatus | None = None,
    ) -> None:
        current = self._current
        updated = BoardSnapshot(
            readiness=readiness or current.readiness,
            shutdown=shutdown or current.shutdown,
            swap=swap or current.swap,
            version=current.version + 1,
        )
        if (updated.readiness, updated.shutdown, updated.swap) == (
            current.readiness,
            current.shutdown,
            current.swap,
        ):
            return  # the same state again: nobody needs waking
        self._current = updated
        for subscriber in list(self._subscribers):
            try:
                subscriber(updated)
            except Exception:  # noqa: BLE001 - one broken subscriber must not stop a publisher
                _log.exception("status subscriber failed")
