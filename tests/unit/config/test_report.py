"""The ``report`` config section: defaults, and every bad field named with its path."""

from __future__ import annotations

import pytest

from agent.config import AgentConfig, ConfigError, parse_document


def test_report_defaults() -> None:
    """5 s samples, weight 0.1, 5 points, 60 s heartbeat: the issue's defaults."""
    config = parse_document(AgentConfig, "", "empty.yaml").report
    assert (config.sample_interval, config.smoothing) == (5.0, 0.1)
    assert (config.threshold_percent, config.heartbeat) == (5.0, 60.0)


def test_every_bad_report_field_is_named_with_its_path() -> None:
    """Bad values are all reported at once, each with its full path."""
    text = "report:\n  sampleInterval: 5\n  smoothing: 2\n  thresholdPercent: -1\n  bogus: 1\n"
    with pytest.raises(ConfigError) as caught:
        parse_document(AgentConfig, text, "agent.yaml")
    message = str(caught.value)
    for path in ("report.sampleInterval", "report.smoothing", "report.thresholdPercent"):
        assert path in message
    assert "report.bogus: unknown field" in message


def test_heartbeat_shorter_than_the_sample_interval_is_refused() -> None:
    """A heartbeat must not be shorter than the sampling interval it is checked on."""
    with pytest.raises(ConfigError, match=r"report\.heartbeat"):
        parse_document(AgentConfig, "report: {sampleInterval: 30s, heartbeat: 10s}", "a.yaml")
