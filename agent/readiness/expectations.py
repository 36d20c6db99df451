"""Which Node to trust right after our own write: the write's result, until the watch catches up.

The watch delivers our patch a moment after the PATCH returns. In between, the cached Node
still carries the taint we just removed, and judging it would send a second, pointless
patch (it would fail its ``test`` op, but it is traffic and noise). Like client-go's
controller expectations, we keep the patch result and prefer it until the watch shows that
very resourceVersion, or relists, or the expectation grows old (the guarded patch makes a
stale guess harmless, so a bound on the wait is only a safety net).

Concurrency: the watch event for our write and the write's result both reach the loop
through ``call_soon_threadsafe`` from different threads, in either order. So the recent
resourceVersions the watch has shown are remembered, and a result the watch already
delivered (or passed) is never expected.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agent.kube.jsontypes import JsonObject


def resource_version(obj: JsonObject | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


@dataclass
class WriteExpectation:
    max_age: float = 30.0
    _node: JsonObject | None = None
    _since: float = 0.0
    _seen: deque[str] = field(default_factory=lambda: deque(maxlen=64))

    def expect(self, written: JsonObject, now: float) -> None:
        """Remember the Node our write returned, unless the watch already showed it."""
        version = resource_version(written)
        self._node = written if version and version not in self._seen else None
        self._since = now

    def observe(self, kind: str, obj: JsonObject | None) -> None:
        """Feed every event of the Node watch (on the loop)."""
        version = resource_version(obj)
        if version:
            self._seen.append(version)
        if self._node is None:
            return
        if kind == "SYNCED" or version == resource_version(self._node):
            self._node = None

    @property
    def pending(self) -> bool:
        return self._node is not None

    def current(self, cached: JsonObject | None, now: float) -> JsonObject | None:
        """The Node to judge: our write's result while the cache lags, else the cache."""
        caught_up = resource_version(cached) == resource_version(self._node)
        if self._node is not None and not caught_up and now - self._since < self.max_age:
            return self._node
        self._node = None
        return cached
