"""Which Node keys (labels, annotations, taints) this agent may write.

Everything under our domain is ours, except the descheduler's keys
(``agent.kubesemantics.nodekeys``): a node's agent never writes those, as admission never lets
it. A capability may take over a
foreign key when that is its job (the readiness gate's Gardener preset owns Gardener's
critical-components taint); the entrypoint passes such keys in, so this plumbing never
imports a capability.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agent import DOMAIN
from agent.kubesemantics.nodekeys import is_descheduler_key


def owned_keys(extra: Iterable[str] = ()) -> Callable[[str], bool]:
    """A predicate: keys under ``kubelet-companion.io/`` plus the ``extra`` ones, never one
    of the descheduler's."""
    foreign = frozenset(extra)

    def owns(key: str) -> bool:
        if is_descheduler_key(key):
            return False
        return key.startswith(f"{DOMAIN}/") or key in foreign

    return owns
