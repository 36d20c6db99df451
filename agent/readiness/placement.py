"""Should a critical DaemonSet run on this node? The DaemonSet controller's rules, twice bent.

``NodeShouldRunDaemonPod`` says yes when the template's ``nodeName`` (if any) is this node,
the nodeSelector and required node affinity match, and every NoSchedule/NoExecute taint is
tolerated by the template's tolerations plus the controller's defaults. We follow that, with
two deliberate differences, because the gate taint and the start-up taints are themselves
reasons the DaemonSet is not scheduled *yet*:

- the gate taint is set aside; a DaemonSet that would run here but does not tolerate it can
  never get a pod while the gate is held, so it is reported as *intolerant* (a Warning and a
  log line) instead of being skipped silently, and it does not hold the gate (holding it
  would deadlock the node);
- start-up taints (``readiness.startupTaints``, e.g. ``node.kubernetes.io/not-ready``) are set
  aside too: they go away by themselves, and a DaemonSet kept off only by them is required,
  so the gate does not open before it has a pod.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.kube.patches import taints_of
from agent.kubesemantics.nodeaffinity import node_selector_mismatch, required_affinity_mismatch
from agent.kubesemantics.tolerations import daemon_pod_tolerations, describe_taint, untolerated
from agent.readiness.presets import GATE_TAINT_EFFECT


@dataclass(frozen=True)
class Placement:
    """The verdict for one DaemonSet on this node."""

    required: bool
    reason: str = ""
    """Why it is not required (empty when it is)."""
    intolerant: bool = False
    """It would run here but does not tolerate the gate taint."""
    waiting_for_taints: tuple[str, ...] = ()
    """Start-up taints it does not tolerate: its pod comes once they are gone."""


def _gate_taints(
    node_taints: Sequence[Mapping[str, Any]], gate_key: str
) -> list[Mapping[str, Any]]:
    held = [taint for taint in node_taints if taint.get("key") == gate_key]
    return held or [{"key": gate_key, "effect": GATE_TAINT_EFFECT}]


def place(  # noqa: PLR0911 - one exit per rule, in the DaemonSet controller's order
    daemon_set: Mapping[str, Any],
    node: Mapping[str, Any],
    *,
    gate_key: str,
    startup_taints: Collection[str] = (),
) -> Placement:
    """Decide whether ``daemon_set`` must have a pod on ``node`` before the gate opens."""
    metadata = node.get("metadata") or {}
    node_name = str(metadata.get("name") or "")
    labels: Mapping[str, str] = metadata.get("labels") or {}
    template = (daemon_set.get("spec") or {}).get("template") or {}
    pod_spec: Mapping[str, Any] = template.get("spec") or {}

    if (daemon_set.get("metadata") or {}).get("deletionTimestamp"):
        return Placement(required=False, reason="being deleted")
    wanted_node = pod_spec.get("nodeName")
    if wanted_node and wanted_node != node_name:
        return Placement(required=False, reason=f"template nodeName is {wanted_node}")
    if reason := node_selector_mismatch(pod_spec.get("nodeSelector") or {}, labels):
        return Placement(required=False, reason=reason)
    if reason := required_affinity_mismatch(pod_spec, labels, node_name):
        return Placement(required=False, reason=reason)

    tolerations = daemon_pod_tolerations(pod_spec)
    node_taints = taints_of(node)
    others = [
        taint
        for taint in node_taints
        if taint.get("key") != gate_key and taint.get("key") not in startup_taints
    ]
    if blocking := untolerated(others, tolerations):
        return Placement(
            required=False,
            reason="does not tolerate taint " + ", ".join(describe_taint(t) for t in blocking),
        )
    if untolerated(_gate_taints(node_taints, gate_key), tolerations):
        return Placement(
            required=False,
            reason=f"does not tolerate the gate taint {gate_key}; it cannot get a pod here "
            "while the gate is held (add a toleration for it)",
            intolerant=True,
        )
    starting = [t for t in node_taints if t.get("key") in startup_taints and t.get("key")]
    waiting = tuple(describe_taint(t) for t in untolerated(starting, tolerations))
    return Placement(required=True, waiting_for_taints=waiting)
