"""Which Node keys (labels, annotations, taints) this agent may write.

Everything under our domain is ours. The readiness gate's Gardener preset takes over one
foreign key, Gardener's critical-components taint, because that is its job there.
"""

from __future__ import annotations

from collections.abc import Callable

from agent import DOMAIN
from agent.config import AgentConfig

GARDENER_READINESS_TAINT = "node.gardener.cloud/critical-components-not-ready"


def owned_keys(config: AgentConfig) -> Callable[[str], bool]:
    extra = set()
    if config.readiness.enabled and config.readiness.preset == "gardener":
        extra.add(GARDENER_READINESS_TAINT)

    def owns(key: str) -> bool:
        return key.startswith(f"{DOMAIN}/") or key in extra

    return owns
