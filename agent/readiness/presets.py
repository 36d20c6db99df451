"""The keys the readiness gate speaks: one place for both presets.

The ``default`` preset uses our own domain. The ``gardener`` preset speaks Gardener's keys so
the agent can take over the job of gardener-resource-manager's node-critical-components
controller in clusters whose kubelets already register with Gardener's taint and whose
critical add-ons already carry Gardener's label and CSI annotations.

``agent.runtime.ownership`` imports from here, so the taint key we are allowed to remove is
always the taint key we look for: there is exactly one definition of each.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent import DOMAIN
from agent.kubesemantics.wellknown import NO_SCHEDULE

GARDENER_DOMAIN = "node.gardener.cloud"
CRITICAL_LABEL_VALUE = "true"
GATE_TAINT_EFFECT = NO_SCHEDULE
BOOTSTRAP_COMPLETED_ANNOTATION = f"{DOMAIN}/bootstrap-completed"
"""Set (RFC 3339 time) when the gate opened; in both presets, because the key is ours."""


@dataclass(frozen=True)
class GateKeys:
    """The taint we hold, the label that marks critical things, the CSI annotation prefix."""

    taint: str
    label: str
    csi_annotation_prefix: str

    @property
    def label_selector(self) -> str:
        return f"{self.label}={CRITICAL_LABEL_VALUE}"


PRESETS: dict[str, GateKeys] = {
    "default": GateKeys(
        taint=f"{DOMAIN}/critical-components-not-ready",
        label=f"{DOMAIN}/critical-component",
        csi_annotation_prefix=f"{DOMAIN}/wait-for-csi-node-",
    ),
    "gardener": GateKeys(
        taint=f"{GARDENER_DOMAIN}/critical-components-not-ready",
        label=f"{GARDENER_DOMAIN}/critical-component",
        csi_annotation_prefix=f"{GARDENER_DOMAIN}/wait-for-csi-node-",
    ),
}


def gate_keys(preset: str, taint_key: str = "") -> GateKeys:
    """The keys of ``preset``, with the taint key overridden when ``taint_key`` is set."""
    keys = PRESETS[preset]
    if taint_key:
        return GateKeys(taint_key, keys.label, keys.csi_annotation_prefix)
    return keys
