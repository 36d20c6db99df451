"""The shutdown tests' pods, unit and integration alike: one builder over ``kubeobjects.pod``.

A shutdown test's pod is Running on ``NODE`` with 30 s of grace (more than the tests'
buckets, so the bucket caps it) and the uid ``<name>-uid`` (an API server gives it its own).
A ``priority`` is written the way a pod has it once admitted: ``spec.priority``, which the
agent reads (a unit test's doubles admit nothing), and the PriorityClass
``priority_class_name(priority)``, which the fake API server's Priority admission resolves
and checks against it (the integration rig creates the classes the pods name).
"""

from __future__ import annotations

from typing import Any

from agent.kubesemantics.wellknown import SYSTEM_CRITICAL_PRIORITY
from tests.harness import kubeobjects

NODE = "node-1"
POD_DEFAULTS: dict[str, Any] = {
    "node": NODE,
    "grace_seconds": 30,
    "image": "registry.example/app:1",
    "phase": "Running",
}
"""A shutdown test's pods: Running on ``NODE``, 30 s of grace, of no PriorityClass."""


def priority_class_name(priority: int) -> str:
    """The PriorityClass of ``priority``: the system one for critical pods, else ours."""
    if priority == SYSTEM_CRITICAL_PRIORITY:
        return "system-cluster-critical"
    return f"prio-minus-{-priority}" if priority < 0 else f"prio-{priority}"


def pod(name: str, *, priority: int | None = None, **fields: Any) -> dict[str, Any]:
    """``kubeobjects.pod`` with ``POD_DEFAULTS`` and the uid ``<name>-uid``; ``priority`` sets
    spec.priority and names its PriorityClass; ``fields`` override the rest."""
    if priority is not None:
        fields = {"priority": priority, "priority_class": priority_class_name(priority), **fields}
    return kubeobjects.pod(name, **{"uid": f"{name}-uid", **POD_DEFAULTS, **fields})


def quick_pods() -> list[dict[str, Any]]:
    """A pod of each kind the phases tell apart, each with 1 s of grace: ``web`` (no
    priority), ``batch`` (below 0) and ``dns`` (critical)."""
    return [
        pod("web", grace_seconds=1),
        pod("batch", priority=-10, grace_seconds=1),
        pod("dns", priority=SYSTEM_CRITICAL_PRIORITY, grace_seconds=1),
    ]
