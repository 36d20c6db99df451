"""Which PodDisruptionBudgets select a pod, by the API server's rules for ``policy/v1``.

Both the DefaultEvictor (the ``PodsWithoutPDB`` protection) and the planner (which applies
budgets the way the eviction subresource does) ask this, so it lives once, here. A budget's
selector that is absent selects nothing; an empty one selects every pod of its namespace
(``policy/v1`` changed that from ``v1beta1``); one that does not parse selects nothing.
"""

from __future__ import annotations

from agent.descheduler.model import ClusterSnapshot, DisruptionBudget, PodInfo
from agent.kube.labelselector import SelectorError, from_label_selector, matches


def selects(budget: DisruptionBudget, pod: PodInfo) -> bool:
    try:
        selector = from_label_selector(budget.selector)
    except SelectorError:
        return False
    return selector is not None and matches(selector, pod.labels)


def budgets_for(snapshot: ClusterSnapshot, pod: PodInfo) -> list[DisruptionBudget]:
    """The budgets in the pod's namespace that select it, sorted by name."""
    found = [b for b in snapshot.disruption_budgets.get(pod.namespace, ()) if selects(b, pod)]
    return sorted(found, key=lambda budget: budget.name)
