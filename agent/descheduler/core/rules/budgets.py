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

from agent.descheduler.model.cluster import ClusterSnapshot, DisruptionBudget, PodInfo
from agent.kubesemantics.labelselector import Selector, SelectorError, from_label_selector, matches


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


class _NamespaceBudgets:
    """One namespace's budgets with parsed selectors, in name order, indexed by label.

    A selector with an ``In`` requirement (every ``matchLabels`` entry is one, of one value)
    can only match pods carrying one of its ``key=value`` labels, so it is filed under each
    of them; a pod is matched only against the selectors filed under its own labels, plus
    those that have no ``In`` requirement. A namespace with hundreds of budgets (one per
    workload, or one per few workloads by ``app in (a, b)``) then costs a pod a few
    candidates, not a pass over them all: that pass made the budget lookups of a cycle
    grow with the square of the namespace's budgets.
    """

    __slots__ = ("by_label", "rest", "selectors")

    def __init__(self, budgets: list[tuple[DisruptionBudget, Selector]]) -> None:
        self.selectors = budgets
        self.by_label: dict[tuple[str, str], list[int]] = {}
        self.rest: list[int] = []
        for position, (_budget, selector) in enumerate(budgets):
            pinned = next((r for r in selector if r.operator == "In"), None)
            if pinned is None:
                self.rest.append(position)
            else:
                for value in set(pinned.values):
                    self.by_label.setdefault((pinned.key, value), []).append(position)

    def matching(self, labels: Mapping[str, str]) -> tuple[DisruptionBudget, ...]:
        """The budgets whose selectors match ``labels``, in name order."""
        by_label = self.by_label
        candidates = list(self.rest)
        for pair in labels.items():
            filed = by_label.get(pair)
            if filed is not None:
                candidates.extend(filed)
        if len(candidates) > 1:
            candidates = sorted(set(candidates))
        selectors = self.selectors
        return tuple(
            selectors[position][0]
            for position in candidates
            if matches(selectors[position][1], labels)
        )


_NONE = _NamespaceBudgets([])


class BudgetIndex:
    """``budgets_for`` over one snapshot, with every selector parsed once."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self._snapshot = snapshot
        self._by_namespace: dict[str, _NamespaceBudgets] = {}
        # The caches share equal label maps, so the pods of one owner mostly hold the same
        # map object: remember the answer per (namespace, map). The entry keeps the map
        # itself and is used only when it is the very same object, so an id reused by a
        # later object can never hit. Namespaces without budgets (most) never reach it.
        self._matched: dict[
            tuple[str, int], tuple[Mapping[str, str], tuple[DisruptionBudget, ...]]
        ] = {}

    def budgets_for(self, pod: PodInfo) -> list[DisruptionBudget]:
        """The budgets in the pod's namespace that select it, sorted by name."""
        namespace = pod.namespace
        budgets = self._by_namespace.get(namespace)
        if budgets is None:
            budgets = self._by_namespace[namespace] = self._parse(namespace)
        if budgets is _NONE:
            return []
        labels = pod.labels
        key = (namespace, id(labels))
        hit = self._matched.get(key)
        if hit is not None and hit[0] is labels:
            return list(hit[1])
        found = budgets.matching(labels)
        self._matched[key] = (labels, found)
        return list(found)

    def _parse(self, namespace: str) -> _NamespaceBudgets:
        ordered = sorted(
            self._snapshot.disruption_budgets.get(namespace, ()), key=lambda budget: budget.name
        )
        parsed = [(b, s) for b in ordered if (s := _selector(b)) is not None]
        return _NamespaceBudgets(parsed) if parsed else _NONE
