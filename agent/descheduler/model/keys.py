"""The keys the projection and the rules agree on: the annotations a rule reads (the only
ones a projection keeps) and the keys of ``PodInfo.extra``."""

from __future__ import annotations

EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
"""Upstream's opt-in: the pod is evictable whatever the protections say (PDBs still apply)."""
PREFER_NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
"""Upstream's opt-out hint: such pods go last; with ``noEvictionPolicy: Mandatory``, never."""
CRITICAL_POD_ANNOTATION = "scheduler.alpha.kubernetes.io/critical-pod"
"""Marks a critical add-on (with a system namespace), as the retired rescheduler read it."""
KEPT_ANNOTATIONS = frozenset(
    {EVICT_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION, CRITICAL_POD_ANNOTATION}
)
"""The only annotations a rule reads; the rest are dropped from the projection."""
UNSCHEDULABLE_SINCE = "unschedulableSince"
"""``PodInfo.extra`` key, only on a pod bound to no node whose ``PodScheduled`` condition is
False with reason ``Unschedulable``: the condition's ``lastTransitionTime`` (Unix seconds)."""

SPREAD_CONSTRAINTS = "topologySpreadConstraints"
"""``PodInfo.extra`` key: ``spec.topologySpreadConstraints`` as sent, a tuple (rare: most pods
carry none, so it lives in ``extra`` and costs the common pod nothing)."""
