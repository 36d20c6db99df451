"""Which Node keys (labels, annotations, taints) this agent may write.

Everything under our domain is ours. The readiness gate's Gardener preset takes over one
foreign key, Gardener's critical-components taint, because that is its job there (and an
explicit ``readiness.taintKey`` is owned likewise). The keys come from
``agent.readiness.presets``, the one place that defines them.
"""

from __future__ import annotations

from collections.abc import Callable

from agent import DOMAIN
from agent.config import AgentConfig
from agent.readiness.presets import PRESETS, gate_keys

GARDENER_READINESS_TAINT = PRESETS["gardener"].taint


def owned_keys(config: AgentConfig) -> Callable[[str], bool]:
    extra = set()
    if config.readiness.enabled:
        extra.add(gate_keys(config.readiness.preset, config.readiness.taint_key).taint)

    def owns(key: str) -> bool:
        return key.startswith(f"{DOMAIN}/") or key in extra

    return owns
