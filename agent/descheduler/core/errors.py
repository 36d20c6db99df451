"""The descheduler's own errors: callers decide by class, as upstream's plugins do.

Upstream's plugins react to the evictor's typed errors (``EvictionNodeLimitError`` ends the
node's loop, ``EvictionTotalLimitError`` ends the plugin); ours mirror them so the same
control flow reads the same way. Every limit error is an ``EvictionLimitReached``, so a caller
that only wants to stop can catch that one.
"""

from __future__ import annotations


class DeschedulerError(Exception):
    """Base of every error the descheduler raises on purpose."""


class EvictionLimitReached(DeschedulerError):
    """A per-cycle eviction limit refused one more eviction; ``str()`` is upstream's text."""

    reason = "maximum number of evicted pods reached"

    def __init__(self, limit: int, scope: str = "") -> None:
        self.limit = limit
        self.scope = scope
        super().__init__(self.reason)


class TotalLimitReached(EvictionLimitReached):
    reason = "maximum number of evicted pods per a descheduling cycle reached"


class NodeLimitReached(EvictionLimitReached):
    reason = "maximum number of evicted pods per node reached"


class NamespaceLimitReached(EvictionLimitReached):
    reason = "maximum number of evicted pods per namespace reached"
