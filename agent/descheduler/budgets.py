"""Which PodDisruptionBudgets select a pod, by the API server's rules for ``policy/v1``.

Both the DefaultEvictor (the ``PodsWithoutPDB`` protection) and the planner (which applies
budgets the way the eviction subresource does) ask this, so it lives once, here. A budget's
selector that is absent selects nothing; an empty one selects every pod of its namespace
(``policy/v1`` changed that from ``v1beta1``); one that does not parse selects nothing.

A cycle asks about thousands of pods against the same budgets, so it keeps a
``BudgetIndex``: each budget's selector is parsed once, the first time its namespace is
asked about. The index is only as fresh as its snapshot, so it lives exactly as long as one
cycle (the planner and each DefaultEvictor build theirs per cycle).
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.descheduler.model import ClusterSnapshot, DisruptionBudget, PodInfo
from agent.kube.labelselector import Selector, SelectorError, from_label_selector, matches


def _selector(budget: DisruptionBudget) -> Selector | None:
    """The parsed selector; ``None`` for one that selects nothing (absent or unparsable)."""
    try:
        return from_label_selector(budget.selector)
    except SelectorError:
        return None


def selects(budget: DisruptionBudget, pod: PodInfo) -> bool:
    selector = _selector(budget)
    return selector is not None and matches(selector, pod.labels)


def budgets_for(snapshot: ClusterSnapshot, pod: PodInfo) -> list[DisruptionBudget]:
    """The budgets in the pod's namespace that select it, sorted by name."""
    found = [b for b in snapshot.disruption_budgets.get(pod.namespace, ()) if selects(b, pod)]
    return sorted(found, key=lambda budget: budget.name)


class BudgetIndex:
    """``budgets_for`` over one snapshot, with every selector parsed once."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self._snapshot = snapshot
        self._by_namespace: dict[str, list[tuple[DisruptionBudget, Selector]]] = {}
        # The caches share equal label maps, so the pods of one owner mostly hold the same
        # map object: remember the answer per (namespace, map). The entry keeps the map
        # itself and is used only when it is the very same object, so an id reused by a
        # later object can never hit.
        self._matched: dict[
            tuple[str, int], tuple[Mapping[str, str], tuple[DisruptionBudget, ...]]
        ] = {}

    def budgets_for(self, pod: PodInfo) -> list[DisruptionBudget]:
        """The budgets in the pod's namespace that select it, sorted by name."""
        labels = pod.labels
        hit = self._matched.get((pod.namespace, id(labels)))
        if hit is not None and hit[0] is labels:
            return list(hit[1])
        parsed = self._by_namespace.get(pod.namespace)
        if parsed is None:
            # Sorted before filtering: the same order as sorting the matches (stable sort).
            ordered = sorted(
                self._snapshot.disruption_budgets.get(pod.namespace, ()),
                key=lambda budget: budget.name,
            )
            parsed = [(b, s) for b in ordered if (s := _selector(b)) is not None]
            self._by_namespace[pod.namespace] = parsed
        found = tuple(budget for budget, selector in parsed if matches(selector, labels))
        self._matched[pod.namespace, id(labels)] = (labels, found)
        return list(found)
