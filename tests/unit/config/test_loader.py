"""Config documents: defaults, every bad field reported with its path, env overrides."""

from pathlib import Path

import pytest

from agent.config import (
    AgentConfig,
    ConfigError,
    PriorityBucket,
    load_agent_config,
    load_file,
    parse_document,
)
from agent.descheduler.options import DeschedulerOptions


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_document(AgentConfig, text, "test.yaml")
    return [str(error) for error in caught.value.errors]


def test_defaults_are_valid_with_shutdown_on_and_swap_enforcement_off() -> None:
    """An empty file gives kubelet's example shutdown (30s, 10s critical), no swap enforcing."""
    config = parse_document(AgentConfig, "", "empty.yaml")
    assert config == AgentConfig()
    assert config.shutdown_buckets == (
        PriorityBucket(priority=0, shutdown_grace_period_seconds=20),
        PriorityBucket(priority=2_000_000_000, shutdown_grace_period_seconds=10),
    )
    assert config.metrics_bind_address == "127.0.0.1:9477"
    assert config.memory_swap.enforce is False


@pytest.mark.parametrize(
    ("text", "buckets"),
    [
        pytest.param("shutdownGracePeriod: 0s", (), id="explicit-0-turns-it-off"),
        pytest.param(
            "shutdownGracePeriod: 5s",
            ((0, 5), (2_000_000_000, 0)),
            id="a-period-alone-has-no-critical-share",
        ),
        pytest.param(
            "shutdownGracePeriodCriticalPods: 0s",
            (),
            id="setting-either-field-drops-the-default",
        ),
        pytest.param(
            "shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 7}]",
            ((0, 7),),
            id="buckets-replace-the-default-pair",
        ),
    ],
)
def test_the_default_applies_only_when_no_shutdown_field_is_set(
    text: str, buckets: tuple[tuple[int, int], ...]
) -> None:
    """Any of the three shutdown fields replaces the 30s/10s default; 0s turns shutdown off."""
    config = parse_document(AgentConfig, text, "x")
    assert tuple(
        (b.priority, b.shutdown_grace_period_seconds) for b in config.shutdown_buckets
    ) == (buckets)


def test_three_bad_fields_and_an_unknown_key_are_all_reported() -> None:
    """One pass names every bad field, with its path, and the unknown key."""
    errors = _errors(
        """
metricsBindAddress: localhost
shutdownGracePeriodByPodPriority:
  - priority: 100
    shutdownGracePeriodSeconds: 10
  - priority: 2000000000
    shutdownGracePeriodSeconds: -5
memorySwap:
  swapBehavior: Unlimited
surpriseKey: 1
"""
    )
    assert len(errors) == 4
    assert any(e.startswith("metricsBindAddress: must be host:port") for e in errors)
    assert "shutdownGracePeriodByPodPriority[1].shutdownGracePeriodSeconds: must be >= 0" in errors
    assert any(e.startswith("memorySwap.swapBehavior: must be one of") for e in errors)
    assert any(e.startswith("surpriseKey: unknown field") for e in errors)


def test_unknown_keys_are_rejected_in_nested_sections() -> None:
    """A typo inside a section is reported with the section's path."""
    assert any(
        e.startswith("memorySwap.enforced: unknown field")
        for e in _errors("memorySwap: {enforced: true}")
    )


def test_both_shutdown_forms_are_a_config_error() -> None:
    """shutdownGracePeriod and shutdownGracePeriodByPodPriority cannot be combined (kubelet)."""
    errors = _errors(
        """
shutdownGracePeriod: 30s
shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 10}]
"""
    )
    assert errors == [
        "shutdownGracePeriodByPodPriority: cannot be set together with shutdownGracePeriod "
        "or shutdownGracePeriodCriticalPods"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s",
            "shutdownGracePeriodCriticalPods: must be <= shutdownGracePeriod",
        ),
        (
            "shutdownGracePeriod: 500ms",
            "shutdownGracePeriod: must be either zero or otherwise >= 1s",
        ),
        (
            "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 200ms",
            "shutdownGracePeriodCriticalPods: must be either zero or otherwise >= 1s",
        ),
        (
            "shutdownGracePeriod: 30",
            "shutdownGracePeriod: must be a duration string with a unit, like 30s",
        ),
    ],
)
def test_kubelet_grace_period_rules(text: str, expected: str) -> None:
    """kubelet's own validation rules for the legacy pair apply unchanged."""
    assert expected in _errors(text)


def test_duplicate_bucket_priorities_are_rejected() -> None:
    """Two buckets with one priority would make grouping ambiguous."""
    errors = _errors(
        "shutdownGracePeriodByPodPriority: [{priority: 5, shutdownGracePeriodSeconds: 1},"
        " {priority: 5, shutdownGracePeriodSeconds: 2}]"
    )
    assert errors == [
        "shutdownGracePeriodByPodPriority[1].priority: duplicate priority 5 (also at index 0)"
    ]


def test_legacy_pair_becomes_two_buckets() -> None:
    """30s total with 10s critical gives priority 0 → 20 s and 2000000000 → 10 s."""
    config = parse_document(
        AgentConfig, "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s", "x"
    )
    assert config.shutdown_buckets == (
        PriorityBucket(priority=0, shutdown_grace_period_seconds=20),
        PriorityBucket(priority=2_000_000_000, shutdown_grace_period_seconds=10),
    )


def test_priority_buckets_are_sorted_ascending() -> None:
    """Buckets are used in ascending priority order whatever order the file lists them."""
    config = parse_document(
        AgentConfig,
        "shutdownGracePeriodByPodPriority: [{priority: 100, shutdownGracePeriodSeconds: 5},"
        " {priority: 0, shutdownGracePeriodSeconds: 7}]",
        "x",
    )
    assert [b.priority for b in config.shutdown_buckets] == [0, 100]


def test_cross_field_rules_wait_for_the_fields_to_parse() -> None:
    """A bad value is reported once, not again through a rule that saw its default."""
    errors = _errors("shutdownGracePeriod: soon\nshutdownGracePeriodCriticalPods: 10s")
    assert errors == [
        "shutdownGracePeriod: invalid duration 'soon' (expected Go form like 30s, 1m30s, 500ms)"
    ]


def test_yaml_syntax_errors_name_the_position() -> None:
    """Broken YAML is reported with its line, not a traceback."""
    (error,) = _errors("a: [1, 2\nb: 3")
    assert "not valid YAML (line" in error


def test_the_document_must_be_a_mapping() -> None:
    """A list at the top level is rejected."""
    assert _errors("- 1\n- 2") == ["the document must be a mapping"]


def test_environment_overrides_node_name_and_kubeconfig(tmp_path: Path) -> None:
    """NODE_NAME and KUBECONFIG win over the file."""
    path = tmp_path / "agent.yaml"
    path.write_text("nodeName: from-file\nkubeconfig: /from/file\n")
    config = load_agent_config(path, {"NODE_NAME": "node-7", "KUBECONFIG": "/from/env"})
    assert (config.node_name, config.kubeconfig) == ("node-7", "/from/env")
    assert load_agent_config(path, {}).node_name == "from-file"


def test_a_bad_node_name_from_the_environment_is_rejected(tmp_path: Path) -> None:
    """NODE_NAME goes through the same validation as the file."""
    with pytest.raises(ConfigError, match="nodeName: must be a lowercase DNS subdomain"):
        load_agent_config(None, {"NODE_NAME": "Not_A_Node"})


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A config path that cannot be read is reported, not defaulted."""
    with pytest.raises(ConfigError, match="cannot read"):
        load_file(AgentConfig, tmp_path / "missing.yaml")


def test_descheduler_config_has_its_own_document() -> None:
    """The descheduler's file rejects agent keys: one document per component."""
    with pytest.raises(ConfigError, match="shutdownGracePeriod: unknown field"):
        parse_document(DeschedulerOptions, "shutdownGracePeriod: 30s", "d.yaml")


@pytest.mark.parametrize(
    ("address", "ok"),
    [
        ("127.0.0.1:9477", True),
        ("[::1]:9477", True),
        (":9477", True),
        ("0.0.0.0:99999", False),
        ("host", False),
        (9477, False),
    ],
)
def test_metrics_bind_address_is_host_port(address: object, ok: bool) -> None:
    """metricsBindAddress must be host:port with a valid port."""
    text = (
        f"metricsBindAddress: {address!r}"
        if isinstance(address, str)
        else f"metricsBindAddress: {address}"
    )
    if ok:
        assert parse_document(AgentConfig, text, "x").metrics_bind_address == address
    else:
        assert any(e.startswith("metricsBindAddress:") for e in _errors(text))
