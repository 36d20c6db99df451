"""The ``readiness`` config section: defaults, presets, and errors that name their field."""

from __future__ import annotations

import pytest

from agent.config import AgentConfig, ConfigError, parse_document
from agent.daemon import owned_node_keys
from agent.readiness.presets import PRESETS, gate_keys
from agent.readiness.settings import GateSettings


def _load(text: str) -> AgentConfig:
    return parse_document(AgentConfig, text, "test.yaml")


def test_defaults_gate_on_our_own_keys() -> None:
    """With no config the gate is on, bootstrap-only, in kube-system, with our domain's keys."""
    settings = GateSettings.from_config(_load("").readiness)
    assert settings.keys.taint == "kubelet-companion.io/critical-components-not-ready"
    assert settings.keys.label_selector == "kubelet-companion.io/critical-component=true"
    assert settings.keys.csi_annotation_prefix == "kubelet-companion.io/wait-for-csi-node-"
    assert settings.mode == "bootstrap-only"
    assert settings.namespaces == ("kube-system",)
    assert "node.kubernetes.io/not-ready" in settings.startup_taints


def test_gardener_preset_speaks_gardeners_keys() -> None:
    """The gardener preset switches taint, label and CSI prefix to node.gardener.cloud."""
    keys = GateSettings.from_config(_load("readiness: {preset: gardener}").readiness).keys
    assert keys.taint == "node.gardener.cloud/critical-components-not-ready"
    assert keys.label == "node.gardener.cloud/critical-component"
    assert keys.csi_annotation_prefix == "node.gardener.cloud/wait-for-csi-node-"


def test_ownership_follows_the_preset_from_one_definition() -> None:
    """The agent may write exactly the gate taint it looks for, and Gardener's only with it."""
    gardener_taint = PRESETS["gardener"].taint
    assert not owned_node_keys(_load(""))(gardener_taint)
    assert owned_node_keys(_load("readiness: {preset: gardener}"))(gardener_taint)
    assert not owned_node_keys(_load("readiness: {preset: gardener, enabled: false}"))(
        gardener_taint
    )
    assert not owned_node_keys(_load("readiness: {preset: gardener}"))("node.gardener.cloud/other")


def test_a_taint_key_override_is_used_and_owned() -> None:
    """taintKey replaces the preset's taint (e.g. for the autoscaler's startup prefix)."""
    key = "startup-taint.cluster-autoscaler.kubernetes.io/critical-components-not-ready"
    config = _load(f"readiness: {{taintKey: {key}}}")
    assert GateSettings.from_config(config.readiness).keys.taint == key
    assert gate_keys("default", key).label == PRESETS["default"].label
    assert owned_node_keys(config)(key)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("readiness: {preset: karpenter}", "readiness.preset"),
        ("readiness: {mode: sometimes}", "readiness.mode"),
        ("readiness: {namespaces: []}", "readiness.namespaces"),
        ("readiness: {namespaces: [Kube_System]}", "readiness.namespaces[0]"),
        ("readiness: {namespaces: [a, a]}", "readiness.namespaces[1]"),
        ("readiness: {holdTime: 30}", "readiness.holdTime"),
        ("readiness: {mode: continuous, holdTime: 500ms}", "readiness.holdTime"),
        ("readiness: {resyncPeriod: 1s}", "readiness.resyncPeriod"),
        ("readiness: {taintKey: 'a/b/c'}", "readiness.taintKey"),
        ("readiness: {taintKey: node.kubernetes.io/not-ready}", "readiness.taintKey"),
        ("readiness: {taintKey: CriticalAddonsOnly}", "readiness.taintKey"),
        ("readiness: {taintKey: kubelet-companion.io/emptying}", "readiness.taintKey"),
        ("readiness: {startupTaints: ['-bad']}", "readiness.startupTaints[0]"),
        ("readiness: {bogus: 1}", "readiness.bogus"),
    ],
)
def test_bad_fields_are_reported_with_their_path(text: str, path: str) -> None:
    """Each bad readiness field is rejected with its full path."""
    with pytest.raises(ConfigError) as caught:
        _load(text)
    assert path in [error.path for error in caught.value.errors]


def test_every_problem_is_reported_at_once() -> None:
    """Two bad fields give two errors, not just the first."""
    with pytest.raises(ConfigError) as caught:
        _load("readiness: {mode: sometimes, preset: nope}")
    assert len(caught.value.errors) == 2


def test_continuous_mode_with_a_hold_time_loads() -> None:
    """A valid continuous config keeps its hold time and event interval."""
    settings = GateSettings.from_config(
        _load("readiness: {mode: continuous, holdTime: 1m30s, eventInterval: 2m}").readiness
    )
    assert (settings.mode, settings.hold_time, settings.event_interval) == (
        "continuous",
        90.0,
        120.0,
    )
