"""Pod QoS class and criticality, by kubelet's rules: one copy for every capability.

The swap audit asks before it grants swap; the descheduler orders its evictions by QoS.

QoS follows ``GetPodQOS``: the ``status.qosClass`` the API server stored wins; without it
the class is computed from every init and regular container (ephemeral containers cannot
have resources), or from pod-level ``spec.resources`` when the pod sets them. A pod is
critical when it is static, a mirror pod, or has priority >= 2000000000; critical pods
never get swap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from agent.kubesemantics.podresources import QOS_RESOURCES, Resources, parse_resources
from agent.kubesemantics.pods import is_mirror_pod, is_static_pod, pod_priority
from agent.kubesemantics.wellknown import SYSTEM_CRITICAL_PRIORITY


class QOSClass(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def resource_qos(resources: Resources) -> QOSClass:
    """The class of one set of requests and limits (one container, or the pod level)."""
    if resources.empty:
        return QOSClass.BEST_EFFORT
    found: QOSClass | None = None
    for name in QOS_RESOURCES:
        request, limit = resources.request(name), resources.limit(name)
        if request != limit:
            # Unequal means at least one is set: neither Guaranteed nor BestEffort.
            return QOSClass.BURSTABLE
        best_effort = request == 0
        here = QOSClass.BEST_EFFORT if best_effort else QOSClass.GUARANTEED
        if found is None:
            found = here
        elif found is not here:
            return QOSClass.BURSTABLE
    return found or QOSClass.BEST_EFFORT


def _containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if isinstance(container, Mapping):
                yield container


def compute_pod_qos(spec: Mapping[str, Any]) -> QOSClass:
    """``ComputePodQOS``: pod-level resources if set, else the containers combined."""
    pod_level = parse_resources(spec.get("resources"))
    if not pod_level.empty:
        return resource_qos(pod_level)
    result: QOSClass | None = None
    for container in _containers(spec):
        here = resource_qos(parse_resources(container.get("resources")))
        if here is QOSClass.BURSTABLE:
            return here
        if result is None:
            result = here
        elif result is not here:
            return QOSClass.BURSTABLE  # one BestEffort and one Guaranteed container
    return result or QOSClass.BEST_EFFORT


def pod_qos(pod: Mapping[str, Any]) -> QOSClass:
    """``GetPodQOS``: the stored ``status.qosClass`` if valid, else computed."""
    stored = (pod.get("status") or {}).get("qosClass")
    if stored in {each.value for each in QOSClass}:
        return QOSClass(stored)
    return compute_pod_qos(pod.get("spec") or {})


def critical_reason(pod: Mapping[str, Any]) -> str | None:
    """Why kubelet treats the pod as critical (``IsCriticalPod``), or ``None``."""
    if is_mirror_pod(pod):
        return "mirror pod"
    if is_static_pod(pod):
        return "static pod"
    if (priority := pod_priority(pod)) >= SYSTEM_CRITICAL_PRIORITY:
        return f"priority {priority} >= {SYSTEM_CRITICAL_PRIORITY}"
    return None
