"""The keys the descheduler writes on Nodes, named once, below every layer that must know them.

The agent and the descheduler share one domain (``agent.DOMAIN``) but never each other's keys:
a node's agent may write only its own Node, and a key the descheduler writes there (a rescue,
an out-of-service or an emptying taint, and the annotations recording them) is the
descheduler's alone. Admission holds agents to that (``daemonset/base/admission-policy.yaml``);
the agent holds itself to it too (``agent.runtime.ownership``), and its config may not name
one of these keys as its own (``agent.config.readiness``). The descheduler builds its taints
from these names (``agent.kubesemantics.taintownership``).
"""

from __future__ import annotations

from agent import DOMAIN
from agent.kubesemantics.wellknown import CRITICAL_ADDONS_ONLY_TAINT, OUT_OF_SERVICE_TAINT

RESCUE_TAINT_KEY = CRITICAL_ADDONS_ONLY_TAINT
RESCUE_ANNOTATION = f"{DOMAIN}/critical-addon-rescue"
"""On a node we tainted ``CriticalAddonsOnly=<namespace>_<pod>:NoSchedule``; value: the
taint's value."""
OUT_OF_SERVICE_TAINT_KEY = OUT_OF_SERVICE_TAINT
OUT_OF_SERVICE_ANNOTATION = f"{DOMAIN}/out-of-service"
"""On a node we tainted ``node.kubernetes.io/out-of-service=nodeshutdown:NoExecute``."""
EMPTYING_TAINT_KEY = f"{DOMAIN}/emptying"
EMPTYING_ANNOTATION = f"{DOMAIN}/emptying"
"""On a node we tainted ``kubelet-companion.io/emptying=HighNodeUtilization:PreferNoSchedule``
while HighNodeUtilization empties it; value: the taint's value."""

DESCHEDULER_TAINT_KEYS = frozenset({RESCUE_TAINT_KEY, OUT_OF_SERVICE_TAINT_KEY, EMPTYING_TAINT_KEY})
"""Taint keys only the descheduler adds and removes."""
DESCHEDULER_ANNOTATIONS = frozenset(
    {RESCUE_ANNOTATION, OUT_OF_SERVICE_ANNOTATION, EMPTYING_ANNOTATION}
)
"""Node annotations only the descheduler writes (each records a taint it added)."""
DESCHEDULER_KEYS = DESCHEDULER_TAINT_KEYS | DESCHEDULER_ANNOTATIONS
"""Every Node key that is the descheduler's alone."""


def is_descheduler_key(key: str) -> bool:
    return key in DESCHEDULER_KEYS
