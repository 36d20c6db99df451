"""Required pod anti-affinity over the snapshot's pods: who violates it, and where it forbids.

Three questions, on the model's projections, each answered from a ``PodIndex`` (and the
terms of the pods in place, ``ExistingTerms``) rather than pod against pod, so a cycle grows
with pods x terms, not pods x pods x terms (``podindex`` says why):

- ``violation``: does a pod already break its own required anti-affinity, because a pod it
  points at runs in the same topology domain? (``CheckPodsWithAntiAffinityExist``.)
- ``NodeFitAntiAffinity``: may a pod go to a node, given the pods already there?
  (``podMatchesInterPodAntiAffinity``, part of upstream's ``NodeFit``.) Only the moving pod's
  own terms are read, and only pods *on that node* count, provided the node carries the
  term's ``topologyKey``: upstream's node fit is no fuller, so the evictor's ``nodeFit`` and
  the plugins that ask it agree with upstream's decisions.
- ``forbidden_domains``: which domains would kube-scheduler refuse, reading whole domains and
  existing pods' terms too? (For the offline plan's placement, which predicts the scheduler,
  not the descheduler.)

The matching rules (term namespaces, selectors, domains) are
``agent.kubesemantics.podaffinity``'s. A term whose selector does not parse is read as upstream
reads it: node fit says "does not fit"; the violation check stops there and says "no
violation" (the terms before it have had their say); the scheduler refuses every node to the
pod that carries it, and skips the terms of a pod in place that carries it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.descheduler.core.rules.existingterms import ExistingTerms
from agent.descheduler.core.rules.podindex import PodIndex, Slot
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.labelselector import SelectorError
from agent.kubesemantics.podaffinity import (
    AffinityTerm,
    affinity_term,
    required_anti_affinity_terms,
)


def anti_affinity_terms(pod: PodInfo) -> tuple[AffinityTerm, ...]:
    """The pod's required anti-affinity terms; raises ``SelectorError`` on a broken one."""
    if pod.affinity is None:
        return ()
    return required_anti_affinity_terms(pod.affinity, pod.namespace)


class ParsedTerms:
    """``anti_affinity_terms``, parsed once per affinity and namespace: a replacement shares
    its pod's ``affinity`` object, and the offline plan reads it at every placement."""

    def __init__(self) -> None:
        self._found: dict[
            tuple[int, str], tuple[object, tuple[AffinityTerm, ...] | SelectorError]
        ] = {}
        """``(id(affinity), namespace)`` -> the affinity (kept, so the id stays its own) and
        its terms or the error."""

    def __call__(self, pod: PodInfo) -> tuple[AffinityTerm, ...]:
        """The pod's required anti-affinity terms; raises ``SelectorError`` on a broken one."""
        key = (id(pod.affinity), pod.namespace)
        found = self._found.get(key)
        if found is None:
            try:
                parsed: tuple[AffinityTerm, ...] | SelectorError = anti_affinity_terms(pod)
            except SelectorError as error:
                parsed = error
            found = self._found[key] = (pod.affinity, parsed)
        if isinstance(found[1], SelectorError):
            raise found[1]
        return found[1]


def has_required_anti_affinity(pod: PodInfo) -> bool:
    return bool(_raw_terms(pod))


def _raw_terms(pod: PodInfo) -> list[Mapping[str, Any]]:
    anti = (pod.affinity or {}).get("podAntiAffinity") or {}
    return list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def violation(pod: PodInfo, index: PodIndex) -> PodInfo | None:
    """The pod of ``index`` that the pod's required anti-affinity rejects in its own topology
    domain (the first found: term by term, namespace by name, then in the order the index
    took the pods), or ``None``. A pod is in a domain of a term when it runs on the same node,
    or on a node with the same value of the term's key; one with the pod's own name never
    counts. ``index.nodes`` are the nodes considered."""
    here = index.nodes.get(pod.node_name)
    if here is None:
        return None
    around: dict[str, int] = {}
    """Namespace -> its pods on the pod's node, but those with the pod's name."""
    for raw in _raw_terms(pod):
        try:
            term = affinity_term(raw, pod.namespace)
        except SelectorError:
            return None  # upstream logs the parse error and reports no violation
        value = here.labels.get(term.topology_key)
        for namespace in sorted(term.namespaces):
            space = index.namespace(namespace)
            if space is None:
                continue
            few = space.few_selected(term.selector)
            if few is not None:
                for position in few:
                    other = space.pods[position]
                    if other.name != pod.name and (
                        other.node_name == here.name
                        or (value is not None and index.value_at(other, term.topology_key) == value)
                    ):
                        return other
                continue
            near = around.get(namespace)
            if near is None:
                near = around[namespace] = space.on_node(here.name) & ~space.named(pod.name)
            domain = near
            if value is not None:
                domain |= space.in_domain(term.topology_key, value) & ~space.named(pod.name)
            if domain:
                found = space.selected(term.selector, within=domain)
                if found:
                    return space.first(found)
    return None


class NodeFitAntiAffinity:
    """Upstream's node fit, its anti-affinity part, over one set of pods (a cycle's snapshot:
    the unfinished pods of every node). Each asking pod's terms are read once: for each term,
    the nodes running a pod it selects."""

    def __init__(self, index: PodIndex) -> None:
        self.index = index
        self._verdicts: dict[str, tuple[tuple[str, frozenset[str]], ...] | None] = {}
        """Pod uid -> each term's key and the nodes it rejects; ``None``: a term is broken."""

    def forbidden(self, pod: PodInfo, node: NodeInfo) -> bool:
        """The pod's required anti-affinity rejects a pod on ``node`` (one with its own name
        never counts)."""
        if not has_required_anti_affinity(pod):
            return False
        rejecting = self._verdicts.get(pod.uid, ())
        if rejecting == ():
            rejecting = self._verdicts[pod.uid] = self._rejecting(pod)
        if rejecting is None:
            return True  # upstream's NodeFit returns the parse error: the pod does not fit
        return any(key in node.labels and node.name in nodes for key, nodes in rejecting)

    def _rejecting(self, pod: PodInfo) -> tuple[tuple[str, frozenset[str]], ...] | None:
        try:
            terms = anti_affinity_terms(pod)
        except SelectorError:
            return None
        found = []
        for term in terms:
            nodes: set[str] = set()
            for namespace in term.namespaces:
                space = self.index.namespace(namespace)
                if space is None:
                    continue
                few = space.few_selected(term.selector)
                if few is not None:
                    nodes.update(
                        space.pods[p].node_name for p in few if space.pods[p].name != pod.name
                    )
                    continue
                mask = space.selected(term.selector, within=~space.named(pod.name))
                nodes.update(space.node_counts(mask))
            found.append((term.topology_key, frozenset(nodes)))
        return tuple(found)


@dataclass(frozen=True)
class ForbiddenDomains:
    """kube-scheduler's InterPodAffinity PreFilter state for one pod, its required
    anti-affinity half: by topology key, the domains the pod may not go to."""

    own: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Domains running a pod the pod's own terms select."""
    existing: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Domains where a pod in place runs whose terms select the pod."""
    broken: str = ""
    """Why every node is refused (a selector of the pod's own does not parse), or ``""``."""

    def rejection(self, node: NodeInfo) -> str | None:
        """Why the scheduler's filter refuses ``node``, or ``None`` when it passes."""
        if self.broken:
            return self.broken
        for key, values in self.own.items():
            value = node.labels.get(key)
            if value is not None and value in values:
                return f"pod's anti-affinity rejects a pod in {key}={value}"
        for key, values in self.existing.items():
            value = node.labels.get(key)
            if value is not None and value in values:
                return f"a pod's anti-affinity rejects the pod in {key}={value}"
        return None


def forbidden_domains(
    pod: PodInfo,
    index: PodIndex,
    existing: ExistingTerms[AffinityTerm],
    *,
    excluding: tuple[Slot, ...] = (),
    terms_of: Callable[[PodInfo], tuple[AffinityTerm, ...]] = anti_affinity_terms,
) -> ForbiddenDomains:
    """kube-scheduler's InterPodAffinity Filter, its required anti-affinity half, for placing
    ``pod``. Unlike upstream's node fit it reads whole topology domains and both directions:

    - the pod's own terms: a pod of ``index`` they select runs on a node of the domain
      (but the pods at ``excluding``: the pod itself, if it is still in place);
    - the terms of pods in place (``existing``: required anti-affinity, by term): one of them
      selects the pod and its owner runs in the domain (the pod's own terms left out).

    A term applies only where a node carries its key. ``terms_of`` parses a pod's terms.
    """
    try:
        own_terms = terms_of(pod) if has_required_anti_affinity(pod) else ()
    except SelectorError as error:
        return ForbiddenDomains(broken=f"pod's anti-affinity selector does not parse: {error}")
    own: dict[str, set[str]] = {}
    for term in own_terms:
        counts = index.domain_counts(
            term.namespaces, term.selector, term.topology_key, excluding=excluding
        )
        if counts:
            own.setdefault(term.topology_key, set()).update(counts)
    theirs: dict[str, set[str]] = {}
    for term, counts in existing.selecting(
        pod.labels, lambda t: t.selects(pod.namespace, pod.labels), excluding_uid=pod.uid
    ):
        theirs.setdefault(term.topology_key, set()).update(counts)
    return ForbiddenDomains(
        own={key: frozenset(values) for key, values in own.items()},
        existing={key: frozenset(values) for key, values in theirs.items()},
    )
