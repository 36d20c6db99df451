"""Required pod anti-affinity over the snapshot's pods: who violates it, and where it forbids.

Two questions, two upstream functions, both on the model's projections:

- ``forbidden_by_pods_on``: may a pod go to a node, given the pods already there?
  (``podMatchesInterPodAntiAffinity``, part of upstream's ``NodeFit``.) Only the moving pod's
  own terms are read, and only pods *on that node* count, provided the node carries the
  term's ``topologyKey``: upstream's node fit is no fuller, so the evictor's ``nodeFit`` and
  the plugins that ask it agree with upstream's decisions.
- ``violated_by``: does a pod already break its own required anti-affinity, because a pod it
  points at runs in the same topology domain? (``CheckPodsWithAntiAffinityExist``.)

The matching rules (term namespaces, selectors, domains) are ``agent.kube.podaffinity``'s. A
term whose selector does not parse makes the whole check answer as upstream's does: node fit
says "does not fit", the violation check says "no violation".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agent.descheduler.model import NodeInfo, PodInfo
from agent.kube.labelselector import SelectorError
from agent.kube.podaffinity import AffinityTerm, required_anti_affinity_terms, same_domain


def anti_affinity_terms(pod: PodInfo) -> tuple[AffinityTerm, ...]:
    """The pod's required anti-affinity terms; raises ``SelectorError`` on a broken one."""
    if pod.affinity is None:
        return ()
    return required_anti_affinity_terms(pod.affinity, pod.namespace)


def has_required_anti_affinity(pod: PodInfo) -> bool:
    anti = (pod.affinity or {}).get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


def forbidden_by_pods_on(pod: PodInfo, node: NodeInfo, pods_on_node: Iterable[PodInfo]) -> bool:
    """The pod's required anti-affinity rejects a pod on ``node`` (finished pods excluded)."""
    if not has_required_anti_affinity(pod):
        return False
    try:
        terms = anti_affinity_terms(pod)
    except SelectorError:
        return True  # upstream's NodeFit returns the parse error: the pod does not fit
    present = [t for t in terms if t.topology_key in node.labels]
    if not present:
        return False
    for other in pods_on_node:
        if other.name == pod.name or other.phase in ("Succeeded", "Failed"):
            continue  # upstream skips by name only, and lists only non-finished pods
        if any(term.selects(other.namespace, other.labels) for term in present):
            return True
    return False


def violated_by(
    pod: PodInfo,
    nodes: Mapping[str, NodeInfo],
    pods_by_namespace: Mapping[str, Sequence[PodInfo]],
) -> PodInfo | None:
    """The pod among ``pods_by_namespace`` that the pod's required anti-affinity rejects in
    its own topology domain, or ``None``. ``nodes`` are the nodes considered (by name)."""
    here = nodes.get(pod.node_name)
    if here is None or not has_required_anti_affinity(pod):
        return None
    try:
        terms = anti_affinity_terms(pod)
    except SelectorError:
        return None  # upstream logs the parse error and reports no violation
    for term in terms:
        for namespace in sorted(term.namespaces):
            for other in pods_by_namespace.get(namespace, ()):
                if other.name == pod.name or not term.selects(other.namespace, other.labels):
                    continue
                there = nodes.get(other.node_name)
                if there is not None and same_domain(
                    here.name, here.labels, there.name, there.labels, term.topology_key
                ):
                    return other
    return None
