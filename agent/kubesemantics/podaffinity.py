"""Required inter-pod anti-affinity terms, matched as the descheduler's upstream matches them.

One copy for every rule that asks "may these two pods share a topology domain": the
descheduler's node fit (``podMatchesInterPodAntiAffinity``), its anti-affinity plugin
(``CheckPodsWithAntiAffinityExist``) and the offline plan's placement.

Follows upstream's ``utils/predicates.go``: a term's namespaces are its ``namespaces`` list, or
the owning pod's namespace when the list is empty (``namespaceSelector`` is not read, as
upstream does not read it); its ``labelSelector`` is ``metav1.LabelSelector`` (absent selects
no pod, ``{}`` every pod). Two nodes share a term's domain when they are the same node, or both
carry its ``topologyKey`` with equal values (``hasSameLabelValue``); the descheduler applies
that rule to whole sets of pods at once, through its pod index.

Pure: plain mappings in, answers out. A selector the API server would reject raises
``SelectorError`` (callers decide, as upstream's callers do, what a broken term means).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.kubesemantics.labelselector import Selector, from_label_selector, matches


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One ``PodAffinityTerm``, its selector parsed and its namespaces resolved."""

    namespaces: frozenset[str]
    selector: Selector | None
    """``None``: the term has no ``labelSelector`` and selects no pod."""
    topology_key: str

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """``PodMatchesTermsNamespaceAndSelector``: the pod is one the term points at."""
        return (
            self.selector is not None
            and namespace in self.namespaces
            and matches(self.selector, labels)
        )


def affinity_term(raw: Mapping[str, Any], owner_namespace: str) -> AffinityTerm:
    """A ``PodAffinityTerm`` of a pod in ``owner_namespace``; raises ``SelectorError``."""
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or ()) or frozenset(
        {owner_namespace}
    )
    return AffinityTerm(
        namespaces=namespaces,
        selector=from_label_selector(raw.get("labelSelector")),
        topology_key=str(raw.get("topologyKey") or ""),
    )


def required_anti_affinity_terms(
    affinity: Mapping[str, Any] | None, owner_namespace: str
) -> tuple[AffinityTerm, ...]:
    """``GetPodAntiAffinityTerms``: the required anti-affinity terms of a pod's ``affinity``.

    Raises ``SelectorError`` when any term's selector does not parse.
    """
    anti = (affinity or {}).get("podAntiAffinity") or {}
    raws = anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    return tuple(affinity_term(raw, owner_namespace) for raw in raws)
