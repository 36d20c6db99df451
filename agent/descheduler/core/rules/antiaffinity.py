"""Required pod anti-affinity over the snapshot's pods: who violates it, and where it forbids.

Three questions, on the model's projections:

- ``forbidden_by_pods_on``: may a pod go to a node, given the pods already there?
  (``podMatchesInterPodAntiAffinity``, part of upstream's ``NodeFit``.) Only the moving pod's
  own terms are read, and only pods *on that node* count, provided the node carries the
  term's ``topologyKey``: upstream's node fit is no fuller, so the evictor's ``nodeFit`` and
  the plugins that ask it agree with upstream's decisions.
- ``violated_by``: does a pod already break its own required anti-affinity, because a pod it
  points at runs in the same topology domain? (``CheckPodsWithAntiAffinityExist``.)
- ``scheduler_anti_affinity_rejection``: would kube-scheduler refuse the node, reading whole
  domains and existing pods' terms too? (For the offline plan's placement, which predicts
  the scheduler, not the descheduler.)

The matching rules (term namespaces, selectors, domains) are ``agent.kube.podaffinity``'s. A
term whose selector does not parse makes the whole check answer as upstream's does: node fit
says "does not fit", the violation check says "no violation".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from agent.descheduler.model.cluster import NodeInfo, PodInfo
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


def scheduler_anti_affinity_rejection(
    pod: PodInfo,
    node: NodeInfo,
    nodes: Mapping[str, NodeInfo],
    pods_on: Callable[[str], Iterable[PodInfo]],
    with_anti_affinity: Iterable[PodInfo],
) -> str | None:
    """kube-scheduler's InterPodAffinity Filter, its required anti-affinity half, for placing
    ``pod`` on ``node``, or ``None`` when it passes. Unlike upstream's node fit it reads
    whole topology domains and both directions:

    - the pod's own terms: a pod they select runs on a node of ``node``'s domain;
    - existing pods' terms (``with_anti_affinity``: the placed pods that have required
      anti-affinity): one of them selects the pod and runs in ``node``'s domain.

    A term applies only where ``node`` carries its key. ``pods_on`` gives the pods placed on a
    node (finished ones are skipped); ``nodes`` maps names to the nodes they may run on.
    A broken selector of the pod's own rejects every node, as the scheduler's PreFilter fails.
    """
    return _own_terms_rejection(pod, node, nodes, pods_on) or _existing_terms_rejection(
        pod, node, nodes, with_anti_affinity
    )


def _own_terms_rejection(
    pod: PodInfo,
    node: NodeInfo,
    nodes: Mapping[str, NodeInfo],
    pods_on: Callable[[str], Iterable[PodInfo]],
) -> str | None:
    try:
        own = anti_affinity_terms(pod) if has_required_anti_affinity(pod) else ()
    except SelectorError as error:
        return f"pod's anti-affinity selector does not parse: {error}"
    for term in own:
        value = node.labels.get(term.topology_key)
        if value is None:
            continue
        for other_node in nodes.values():
            if other_node.labels.get(term.topology_key) != value:
                continue
            for other in pods_on(other_node.name):
                if (
                    other.uid != pod.uid
                    and other.phase not in ("Succeeded", "Failed")
                    and term.selects(other.namespace, other.labels)
                ):
                    return f"pod's anti-affinity rejects {other.key} in {term.topology_key}={value}"
    return None


def _existing_terms_rejection(
    pod: PodInfo,
    node: NodeInfo,
    nodes: Mapping[str, NodeInfo],
    with_anti_affinity: Iterable[PodInfo],
) -> str | None:
    for other in with_anti_affinity:
        there = nodes.get(other.node_name)
        if there is None or other.uid == pod.uid or other.phase in ("Succeeded", "Failed"):
            continue
        try:
            terms = anti_affinity_terms(other)
        except SelectorError:
            continue  # the scheduler skips an existing pod's term that does not parse
        for term in terms:
            value = node.labels.get(term.topology_key)
            if (
                value is not None
                and there.labels.get(term.topology_key) == value
                and term.selects(pod.namespace, pod.labels)
            ):
                return f"{other.key}'s anti-affinity rejects the pod in {term.topology_key}={value}"
    return None
