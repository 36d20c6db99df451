"""Each overlay changes the one thing it is for and leaves the rest of the base alone: the
descheduler as a CronJob (the Lease Role stays, for the cooldown's memory), the agent's
readiness preset switched to Gardener's keys (and the admission policy's readiness taint key
with it). None touches the agent's RBAC or the rest of its admission policy, which are the
base's (tests/unit/manifests/test_manifests_admission*.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.harness.kustomize import (
    AGENT_ACCOUNT,
    BASE,
    DESCHEDULER_ACCOUNT,
    JSON,
    MANIFESTS,
    agent_config,
    one,
    overlays,
    render,
    target_id,
)

CRONJOB = MANIFESTS / "overlays" / "cronjob"
GARDENER = MANIFESTS / "overlays" / "gardener"

POLICY = "kubelet-companion-own-node-only"

Key = tuple[str, str]


def _by_key(docs: list[JSON]) -> dict[Key, JSON]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def _changes(overlay: Path) -> tuple[set[Key], set[Key], set[Key]]:
    """(removed, added, changed) objects of ``overlay`` against the base."""
    base, over = _by_key(render(BASE)), _by_key(render(overlay))
    changed = {key for key in base.keys() & over.keys() if base[key] != over[key]}
    return base.keys() - over.keys(), over.keys() - base.keys(), changed


def test_the_shipped_overlays_are_the_ones_tested_here() -> None:
    """The overlays of this scope exist (others, e.g. monitoring, are rendered and validated
    by the generic tests, which glob every overlay)."""
    assert {CRONJOB, GARDENER} <= set(overlays())


def test_the_cronjob_overlay_runs_one_cycle_per_job_instead_of_a_deployment() -> None:
    """The CronJob runs --descheduling-interval=0 without leader election, never two at
    once, keeping a cooldown's Lease in its own namespace; it replaces the Deployment and
    nothing else changes (the Lease Role stays for the cooldown's memory)."""
    removed, added, changed = _changes(CRONJOB)
    assert removed == {("Deployment", DESCHEDULER_ACCOUNT)}
    assert added == {("CronJob", DESCHEDULER_ACCOUNT)}
    assert changed == set()
    cronjob = one(render(CRONJOB), "CronJob", DESCHEDULER_ACCOUNT)
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == DESCHEDULER_ACCOUNT
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert "--descheduling-interval=0" in container["args"]
    assert "--leader-elect" not in container["args"]
    assert "--leader-elect-resource-namespace=$(POD_NAMESPACE)" in container["args"]
    env = {each["name"]: each["valueFrom"]["fieldRef"]["fieldPath"] for each in container["env"]}
    assert env == {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    deployment = one(render(BASE), "Deployment", DESCHEDULER_ACCOUNT)
    (deployed,) = deployment["spec"]["template"]["spec"]["containers"]
    for field in ("image", "env", "resources", "securityContext", "volumeMounts", "livenessProbe"):
        assert container[field] == deployed[field], field
    assert pod["volumes"] == deployment["spec"]["template"]["spec"]["volumes"]


def test_the_gardener_overlay_switches_only_the_readiness_preset() -> None:
    """The agent's config differs from the base's in readiness.preset (gardener) alone, the
    DaemonSet mounts it under its new hashed name, so the agents restart with it, and the
    admission policy admits Gardener's gate taint instead of ours, nothing else changed."""
    base_name, base_config = agent_config(render(BASE))
    name, config = agent_config(render(GARDENER))
    assert base_config.readiness.preset == "default"
    assert config.readiness.preset == "gardener"
    expected = dataclasses.replace(
        base_config, readiness=dataclasses.replace(base_config.readiness, preset="gardener")
    )
    assert config == expected
    assert name != base_name
    removed, added, changed = _changes(GARDENER)
    assert removed == {("ConfigMap", base_name)}
    assert added == {("ConfigMap", name)}
    assert changed == {("DaemonSet", AGENT_ACCOUNT), ("ValidatingAdmissionPolicy", POLICY)}
    daemonset = one(render(GARDENER), "DaemonSet", AGENT_ACCOUNT)
    volumes = daemonset["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": name}} in volumes
    policy, base_policy = (
        one(render(target), "ValidatingAdmissionPolicy", POLICY) for target in (GARDENER, BASE)
    )
    gate = policy["spec"]["variables"].pop(0)
    base_policy["spec"]["variables"].pop(0)
    assert policy == base_policy
    assert gate == {
        "name": "readinessTaintKeys",
        "expression": "['node.gardener.cloud/critical-components-not-ready']",
    }


@pytest.mark.parametrize("overlay", [pytest.param(path, id=target_id(path)) for path in overlays()])
def test_the_agents_rbac_and_admission_policy_are_the_same_in_every_overlay(
    overlay: Path,
) -> None:
    """No overlay widens or narrows the agent's ClusterRole, its binding, or the admission
    policy that keeps it to its own node (but for the readiness gate's taint key, which
    follows the agent's config), nor drops the policy's Deny binding."""
    for kind, name in (
        ("ClusterRole", AGENT_ACCOUNT),
        ("ClusterRoleBinding", AGENT_ACCOUNT),
        ("ServiceAccount", AGENT_ACCOUNT),
        ("ValidatingAdmissionPolicy", POLICY),
        ("ValidatingAdmissionPolicyBinding", POLICY),
    ):
        rendered, base = one(render(overlay), kind, name), one(render(BASE), kind, name)
        if kind == "ValidatingAdmissionPolicy":
            for policy in (rendered, base):
                gate = policy["spec"]["variables"].pop(0)
                assert gate["name"] == "readinessTaintKeys"
        assert rendered == base, kind
