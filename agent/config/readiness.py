"""The readiness gate: which taint we hold on a new node, and what it waits for.

``startupTaints`` exists because the DaemonSet controller's rules, applied literally on a
fresh node, skip every critical DaemonSet that does not tolerate a start-up taint such as
``node.kubernetes.io/not-ready``, and the gate would open before those DaemonSets ever got
a pod. Taints listed here are expected to go away by themselves, so a DaemonSet kept off
the node only by them is waited for rather than skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import Duration, setting
from agent.kubesemantics.names import dns_label_problem, qualified_name_problem
from agent.kubesemantics.nodekeys import is_descheduler_key
from agent.kubesemantics.wellknown import (
    NETWORK_UNAVAILABLE_TAINT,
    NOT_READY_TAINT,
    SYSTEM_NAMESPACE,
    UNINITIALIZED_TAINT,
)

DEFAULT_STARTUP_TAINTS = (
    NOT_READY_TAINT,
    NETWORK_UNAVAILABLE_TAINT,
    UNINITIALIZED_TAINT,
)

_CORE_TAINT_PREFIXES = frozenset(
    {
        "kubernetes.io",
        "k8s.io",
        "node.kubernetes.io",
        "node-role.kubernetes.io",
        "node-restriction.kubernetes.io",
        "node.cloudprovider.kubernetes.io",
    }
)
"""Prefixes whose taints Kubernetes' own components set and remove: never ours to manage.

Other ``*.kubernetes.io`` prefixes stay allowed on purpose: cluster-autoscaler's
``startup-taint.cluster-autoscaler.kubernetes.io/`` is meant for taints like ours.
"""


def _is_reserved(key: str) -> bool:
    return key.rpartition("/")[0] in _CORE_TAINT_PREFIXES


@dataclass(frozen=True)
class ReadinessConfig:
    enabled: bool = setting(True)
    preset: Literal["default", "gardener"] = setting("default")
    taint_key: str = setting("")
    """Overrides the preset's taint key (e.g. to use cluster-autoscaler's startup prefix)."""
    namespaces: tuple[str, ...] = setting(factory=lambda: (SYSTEM_NAMESPACE,))
    mode: Literal["bootstrap-only", "continuous"] = setting("bootstrap-only")
    hold_time: Duration = setting(Duration(30.0))
    resync_period: Duration = setting(Duration(300.0), minimum=10)
    event_interval: Duration = setting(Duration(60.0), minimum=1)
    startup_taints: tuple[str, ...] = setting(factory=lambda: DEFAULT_STARTUP_TAINTS)

    def validate(self) -> list[FieldError]:
        errors = []
        if not self.namespaces:
            errors.append(FieldError("namespaces", "must name at least one namespace"))
        seen: set[str] = set()
        for index, namespace in enumerate(self.namespaces):
            if dns_label_problem(namespace):
                errors.append(FieldError(f"namespaces[{index}]", "must be a DNS label"))
            elif namespace in seen:
                errors.append(FieldError(f"namespaces[{index}]", f"duplicate {namespace!r}"))
            seen.add(namespace)
        if self.taint_key and (problem := qualified_name_problem(self.taint_key)):
            errors.append(FieldError("taintKey", problem))
        elif _is_reserved(self.taint_key):
            errors.append(
                FieldError("taintKey", "this prefix belongs to Kubernetes' own components")
            )
        elif is_descheduler_key(self.taint_key):
            errors.append(FieldError("taintKey", "this key belongs to the central descheduler"))
        for index, key in enumerate(self.startup_taints):
            if problem := qualified_name_problem(key):
                errors.append(FieldError(f"startupTaints[{index}]", problem))
        if self.mode == "continuous" and self.hold_time < 1:
            errors.append(FieldError("holdTime", "must be >= 1s in continuous mode"))
        return errors
