"""The ``descheduler/v1alpha2`` policy: parsed as upstream parses it, every error reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.config.errors import ConfigError
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.framework.types import BALANCE, FILTER, PRE_EVICTION_FILTER
from agent.descheduler.core.plugins.defaultevictor import DefaultEvictorArgs
from agent.descheduler.core.plugins.nodeutilization.lownodeutilization import LowNodeUtilizationArgs
from agent.descheduler.core.policy import parse_policy
from agent.descheduler.policyfile import load_policy, parse_policy_text

README_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
nodeSelector: "node-role.kubernetes.io/worker="
maxNoOfPodsToEvictPerNode: 5000
maxNoOfPodsToEvictPerNamespace: 5000
maxNoOfPodsToEvictTotal: 5000
evictionFailureEventNotification: true
gracePeriodSeconds: 60
metricsProviders:
- source: KubernetesMetrics
profiles:
  - name: ProfileName
    pluginConfig:
    - name: "DefaultEvictor"
      args:
        podProtections:
          defaultDisabled:
            - "PodsWithLocalStorage"
          extraEnabled:
            - "PodsWithPVC"
        nodeFit: true
        minReplicas: 2
        minPodAge: 5m
        priorityThreshold:
          value: 100
    - name: "LowNodeUtilization"
      args:
        thresholds:
          "cpu" : 20
          "memory": 20
          "pods": 20
        targetThresholds:
          "cpu" : 50
          "memory": 50
          "pods": 50
        evictableNamespaces:
          exclude: ["kube-system"]
    - name: "RemoveDuplicates"
      args:
        excludeOwnerKinds: ["Job"]
    plugins:
      balance:
        enabled:
          - "LowNodeUtilization"
          - "RemoveDuplicates"
"""

KNOWN = ", ".join(sorted(REGISTRY))
"""Every built-in plugin, as the unknown-plugin error lists them."""


def _policy(
    plugin_config: list[dict[str, Any]], plugins: dict[str, Any], **top: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{"name": "p", "pluginConfig": plugin_config, "plugins": plugins}],
        **top,
    }


def _errors(raw: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_policy(raw, "<test>")
    return [str(error) for error in caught.value.errors]


def _lnu(args: dict[str, Any]) -> dict[str, Any]:
    return _policy(
        [{"name": "LowNodeUtilization", "args": args}],
        {"balance": {"enabled": ["LowNodeUtilization"]}},
    )


def _evictor(args: dict[str, Any]) -> dict[str, Any]:
    return _policy([{"name": "DefaultEvictor", "args": args}], {})


class TestParsing:
    def test_readme_policy_parses_with_every_top_level_field(self) -> None:
        """A policy in the upstream README's style loads with its limits and profile intact."""
        policy = parse_policy_text(README_POLICY, "<readme>")
        assert policy.node_selector == "node-role.kubernetes.io/worker="
        assert (
            policy.max_no_of_pods_to_evict_per_node,
            policy.max_no_of_pods_to_evict_per_namespace,
            policy.max_no_of_pods_to_evict_total,
            policy.grace_period_seconds,
        ) == (5000, 5000, 5000, 60)
        assert policy.eviction_failure_event_notification is True
        assert [p.source for p in policy.metrics_providers] == ["KubernetesMetrics"]
        profile = policy.profiles[0]
        assert profile.plugins_at(BALANCE) == ("LowNodeUtilization", "RemoveDuplicates")
        lnu = profile.args["LowNodeUtilization"]
        assert isinstance(lnu, LowNodeUtilizationArgs)
        assert lnu.thresholds == {"cpu": 20, "memory": 20, "pods": 20}
        evictor = profile.args["DefaultEvictor"]
        assert isinstance(evictor, DefaultEvictorArgs)
        assert evictor.min_pod_age == 300
        assert evictor.protections() == {
            "SystemCriticalPods",
            "FailedBarePods",
            "DaemonSetPods",
            "PodsWithPVC",
        }

    def test_default_evictor_is_always_present(self) -> None:
        """A profile that never names DefaultEvictor still filters with it, first, with defaults."""
        policy = parse_policy(_policy([], {"balance": {"enabled": ["RemoveDuplicates"]}}), "<test>")
        profile = policy.profiles[0]
        assert profile.plugins_at(FILTER) == ("DefaultEvictor",)
        assert profile.plugins_at(PRE_EVICTION_FILTER) == ("DefaultEvictor",)
        assert profile.args["DefaultEvictor"] == DefaultEvictorArgs()

    def test_disabled_removes_an_enabled_plugin(self) -> None:
        """``disabled`` takes a name out of ``enabled`` at the same extension point."""
        raw = _policy(
            [],
            {
                "balance": {
                    "enabled": ["RemoveDuplicates", "LowNodeUtilization"],
                    "disabled": ["LowNodeUtilization"],
                }
            },
        )
        assert parse_policy(raw, "<test>").profiles[0].plugins_at(BALANCE) == ("RemoveDuplicates",)

    def test_load_policy_reads_a_file(self, tmp_path: Path) -> None:
        """``load_policy`` reads the file named by ``--policy-config-file``."""
        path = tmp_path / "policy.yaml"
        path.write_text(README_POLICY, encoding="utf-8")
        assert load_policy(path).profiles[0].name == "ProfileName"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            _policy([{"name": "Nope"}], {}),
            [f"profiles[0].pluginConfig[0].name: unknown plugin 'Nope' (known: {KNOWN})"],
            id="unknown-plugin-in-pluginConfig",
        ),
        pytest.param(
            _policy([], {"balance": {"enabled": ["Nope"]}}),
            [f"profiles[0].plugins.balance.enabled[0]: unknown plugin 'Nope' (known: {KNOWN})"],
            id="unknown-plugin-enabled",
        ),
        pytest.param(
            _policy([], {"deschedule": {"enabled": ["LowNodeUtilization"]}}),
            [
                (
                    "profiles[0].plugins.deschedule.enabled[0]: plugin "
                    "'LowNodeUtilization' does not implement the deschedule "
                    "extension point"
                )
            ],
            id="wrong-extension-point",
        ),
        pytest.param(
            _policy([], {"preevictionfilter": {"enabled": ["RemoveDuplicates"]}}),
            [
                (
                    "profiles[0].plugins.preevictionfilter.enabled[0]: plugin "
                    "'RemoveDuplicates' does not implement the preEvictionFilter "
                    "extension point"
                )
            ],
            id="balance-plugin-as-filter",
        ),
        pytest.param(
            _policy(
                [
                    {
                        "name": "RemoveDuplicates",
                        "args": {"namespaces": {"include": ["a"], "exclude": ["b"]}},
                    }
                ],
                {},
            ),
            [
                (
                    "profiles[0].pluginConfig[0].args.namespaces: only one of "
                    "include and exclude can be set"
                )
            ],
            id="namespaces-include-and-exclude",
        ),
        pytest.param(
            _lnu({"thresholds": {"cpu": 120}, "targetThresholds": {"cpu": -1}}),
            [
                (
                    "profiles[0].pluginConfig[0].args.thresholds.cpu: cpu "
                    "threshold not in [0, 100] range"
                ),
                (
                    "profiles[0].pluginConfig[0].args.targetThresholds.cpu: cpu "
                    "threshold not in [0, 100] range"
                ),
            ],
            id="thresholds-out-of-range",
        ),
        pytest.param(
            _lnu({"thresholds": {}, "targetThresholds": {"cpu": 50}}),
            ["profiles[0].pluginConfig[0].args.thresholds: no resource threshold is configured"],
            id="thresholds-empty",
        ),
        pytest.param(
            _lnu({"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 50}}),
            [
                (
                    "profiles[0].pluginConfig[0].args.targetThresholds: "
                    "thresholds and targetThresholds configured different "
                    "resources"
                )
            ],
            id="lnu-different-resources",
        ),
        pytest.param(
            _lnu(
                {
                    "thresholds": {"cpu": 60, "memory": 10},
                    "targetThresholds": {"cpu": 50, "memory": 50},
                }
            ),
            [
                (
                    "profiles[0].pluginConfig[0].args.thresholds.cpu: "
                    "thresholds' cpu percentage is greater than targetThresholds'"
                )
            ],
            id="lnu-thresholds-above-target",
        ),
        pytest.param(
            _lnu(
                {
                    "thresholds": {"cpu": 20},
                    "targetThresholds": {"cpu": 50},
                    "evictableNamespaces": {"include": ["a"]},
                }
            ),
            [
                (
                    "profiles[0].pluginConfig[0].args.evictableNamespaces.include: "
                    "only exclude can be set, inclusion is not supported"
                )
            ],
            id="lnu-evictable-namespaces-include",
        ),
        pytest.param(
            _evictor({"priorityThreshold": {"name": "high", "value": 10}}),
            [
                (
                    "profiles[0].pluginConfig[0].args.priorityThreshold: "
                    "priority threshold misconfigured, only one of name and "
                    "value can be set"
                )
            ],
            id="priority-threshold-name-and-value",
        ),
        pytest.param(
            _evictor(
                {"evictLocalStoragePods": True, "podProtections": {"extraEnabled": ["PodsWithPVC"]}}
            ),
            [
                "profiles[0].pluginConfig[0].args.podProtections: cannot be "
                "used alongside the deprecated "
                "evictLocalStoragePods, evictDaemonSetPods, "
                "evictSystemCriticalPods, ignorePvcPods, "
                "ignorePodsWithoutPDB or evictFailedBarePods"
            ],
            id="legacy-booleans-with-podProtections",
        ),
        pytest.param(
            _evictor(
                {
                    "podProtections": {
                        "extraEnabled": ["DaemonSetPods"],
                        "defaultDisabled": ["PodsWithPVC"],
                    }
                }
            ),
            [
                (
                    "profiles[0].pluginConfig[0].args.podProtections.extraEnabled[0]: "
                    "invalid pod protection 'DaemonSetPods' (valid: PodsWithPVC, "
                    "PodsWithoutPDB, PodsWithResourceClaims)"
                ),
                (
                    "profiles[0].pluginConfig[0].args.podProtections.defaultDisabled[0]: "
                    "invalid pod protection 'PodsWithPVC' (valid: "
                    "PodsWithLocalStorage, SystemCriticalPods, FailedBarePods, "
                    "DaemonSetPods)"
                ),
            ],
            id="protections-in-the-wrong-list",
        ),
        pytest.param(
            _evictor({"noEvictionPolicy": "Sometimes"}),
            [
                (
                    "profiles[0].pluginConfig[0].args.noEvictionPolicy: must be "
                    "one of '', 'Preferred', 'Mandatory'"
                )
            ],
            id="no-eviction-policy-value",
        ),
        pytest.param(
            _policy(
                [],
                {},
                metricsProviders=[
                    {"source": "Prometheus"},
                    {"source": "Prometheus", "prometheus": {"url": ""}},
                ],
            ),
            [
                "metricsProviders[0].prometheus: prometheus configuration is required when "
                "prometheus source is enabled",
                "metricsProviders[1].prometheus.url: prometheus URL is required when "
                "prometheus is enabled",
            ],
            id="prometheus-provider-without-url",
        ),
        pytest.param(
            _policy(
                [],
                {},
                metricsProviders=[
                    {
                        "source": "Prometheus",
                        "prometheus": {"url": "prometheus:9090", "authToken": {}},
                    },
                ],
            ),
            [
                "metricsProviders[0].prometheus.url: error parsing prometheus URL: "
                "'prometheus:9090': the scheme must be http or https",
                "metricsProviders[0].prometheus.authToken.secretReference: prometheus "
                "authToken secret is expected to be set when authToken field is",
            ],
            id="prometheus-url-and-token",
        ),
        pytest.param(
            _policy(
                [],
                {},
                metricsProviders=[
                    {
                        "source": "Prometheus",
                        "prometheus": {
                            "url": "https://prometheus",
                            "authToken": {"secretReference": {"name": "token"}},
                        },
                    },
                ],
            ),
            [
                "metricsProviders[0].prometheus.authToken.secretReference: prometheus "
                "authToken secret reference does not set both namespace and name",
            ],
            id="prometheus-token-secret-without-namespace",
        ),
        pytest.param(
            _policy(
                [],
                {},
                metricsProviders=[{"source": "KubernetesMetrics"}, {"source": "KubernetesMetrics"}],
                metricsCollector={"enabled": True},
            ),
            [
                'metricsProviders[1].source: metric provider "KubernetesMetrics" is already '
                "configured, each source can be configured only once",
                "metricsCollector: it is not allowed to combine metrics provider when metrics "
                "collector is enabled",
            ],
            id="metrics-provider-twice",
        ),
        pytest.param(
            _policy([], {}, apiVersion="descheduler/v1alpha1", nodeSelector="a in b"),
            [
                "apiVersion: must be one of 'descheduler/v1alpha2'",
                "nodeSelector: expected '(' after in/notin",
            ],
            id="api-version",
        ),
        pytest.param(
            _policy([], {}, maxNoOfPodsToEvictTotal=-1, surprise=1),
            [
                (
                    "surprise: unknown field (known: apiVersion, "
                    "evictionFailureEventNotification, gracePeriodSeconds, kind, "
                    "maxNoOfPodsToEvictPerNamespace, maxNoOfPodsToEvictPerNode, "
                    "maxNoOfPodsToEvictTotal, metricsCollector, "
                    "metricsProviders, nodeSelector, profiles)"
                ),
                "maxNoOfPodsToEvictTotal: must be >= 0",
            ],
            id="unknown-field-and-negative-limit",
        ),
        pytest.param(
            _policy([], {}, nodeSelector="a in b"),
            ["nodeSelector: expected '(' after in/notin"],
            id="bad-node-selector",
        ),
    ],
)
def test_every_validation_error_is_reported_with_its_path(
    raw: dict[str, Any], expected: list[str]
) -> None:
    """Each upstream validation rule rejects the policy with the field's path and reason."""
    assert _errors(raw) == expected


def test_all_errors_at_once() -> None:
    """Errors in several profiles and plugins come back together, not one at a time."""
    raw = _policy(
        [
            {"name": "Nope"},
            {
                "name": "LowNodeUtilization",
                "args": {"thresholds": {"cpu": 101}, "targetThresholds": {"cpu": 50}},
            },
            {"name": "DefaultEvictor", "args": {"priorityThreshold": {"name": "x", "value": 1}}},
        ],
        {"balance": {"enabled": ["Nope2"]}},
    )
    assert len(_errors(raw)) == 4


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(
            b"profiles: [\xff\xfe]", "not valid UTF-8 (byte 0xff at offset 11)", id="not-utf8"
        ),
        pytest.param(
            b"profiles: [a, b",
            "not valid YAML (line 1, column 16): expected ',' or ']', but got '<stream end>'",
            id="not-yaml",
        ),
        pytest.param(b"- a\n- b\n", "the document must be a mapping", id="not-a-mapping"),
        pytest.param(
            b"key: !!python/object:os.system x",
            (
                "not valid YAML (line 1, column 6): could not determine a "
                "constructor for the tag "
                "'tag:yaml.org,2002:python/object:os.system'"
            ),
            id="unsafe-tag",
        ),
    ],
)
def test_unreadable_file_is_a_config_error(tmp_path: Path, data: bytes, reason: str) -> None:
    """A non-UTF-8 or non-YAML file is a ``ConfigError`` naming the problem, not a traceback."""
    path = tmp_path / "policy.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as caught:
        load_policy(path)
    assert [str(e) for e in caught.value.errors] == [reason]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A policy path that cannot be read is reported as such."""
    with pytest.raises(ConfigError, match="cannot read"):
        load_policy(tmp_path / "absent.yaml")


LIMITS = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}


class TestQueries:
    """What the running process asks of a loaded policy."""

    def test_enabled_args_are_those_of_a_profile_that_enables_the_plugin(self) -> None:
        """``enabled_args`` gives the args of an enabled Balance plugin, and ``None`` for one
        configured but not enabled."""
        enabled = parse_policy(_lnu(LIMITS), "<test>")
        args = enabled.enabled_args("LowNodeUtilization", LowNodeUtilizationArgs)
        assert args is not None
        assert args.thresholds == {"cpu": 20}
        configured_only = parse_policy(
            _policy([{"name": "LowNodeUtilization", "args": LIMITS}], {}),
            "<test>",
        )
        assert configured_only.enabled_args("LowNodeUtilization", LowNodeUtilizationArgs) is None

    def test_cooldown_and_rescue_timeout(self) -> None:
        """``uses_cooldown`` is on when any plugin sets ``cooldownSeconds``; the rescue taint
        timeout is the longest CriticalAddonRescue's, its default without one."""
        assert not parse_policy(_lnu(LIMITS), "<test>").uses_cooldown
        assert parse_policy(_lnu({**LIMITS, "cooldownSeconds": 600}), "<test>").uses_cooldown
        rescue = _policy(
            [{"name": "CriticalAddonRescue", "args": {"taintTimeoutSeconds": 900}}],
            {"balance": {"enabled": ["CriticalAddonRescue"]}},
        )
        assert parse_policy(rescue, "<test>").rescue_taint_timeout == 900
        assert parse_policy(_lnu(LIMITS), "<test>").rescue_taint_timeout == 600
