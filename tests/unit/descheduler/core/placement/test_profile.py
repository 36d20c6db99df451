"""``descheduler plan --scheduler-config``: the cluster's KubeSchedulerConfiguration read as
kube-scheduler merges it over its defaults, and every part the prediction cannot model
refused by path (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
from agent.descheduler.core.placement.profile import (
    BALANCED,
    DEFAULT_PROFILE,
    DEFAULT_WEIGHTS,
    FIT,
    MOST_ALLOCATED,
    parse_scheduler_config,
)
from tests.harness.repository import EXAMPLES


def _config(*profiles: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": list(profiles),
    }


BIN_PACKING = {
    "schedulerName": "default-scheduler",
    "pluginConfig": [
        {
            "name": "NodeResourcesFit",
            "args": {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
                }
            },
        }
    ],
    "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
}


def test_no_profiles_is_the_default_profile() -> None:
    """A configuration without profiles schedules with the defaults."""
    assert parse_scheduler_config(_config()) == (DEFAULT_PROFILE, [])


def test_bin_packing_is_read_with_its_weights() -> None:
    """MostAllocated with its resource weights; a disabled plugin stops scoring; the other
    defaults keep their weights."""
    profile, errors = parse_scheduler_config(_config(BIN_PACKING))
    assert errors == []
    assert profile.fit_strategy == MOST_ALLOCATED
    assert profile.fit_weights == (3, 1)
    assert BALANCED not in profile.weights
    assert profile.weight(FIT) == 1
    assert profile.weight("TaintToleration") == DEFAULT_WEIGHTS["TaintToleration"]


def test_merging_follows_the_scheduler() -> None:
    """``*`` disables every default, an enabled plugin comes back with its weight (1 when
    none is given), and only the ``default-scheduler`` profile counts."""
    other = {"schedulerName": "batch", "plugins": {"score": {"disabled": [{"name": "*"}]}}}
    mine = {
        "plugins": {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "NodeResourcesFit", "weight": 5}, {"name": "ImageLocality"}],
            }
        }
    }
    profile, errors = parse_scheduler_config(_config(other, mine))
    assert errors == []
    assert profile.weights == {"NodeResourcesFit": 5, "ImageLocality": 1}


@pytest.mark.parametrize(
    ("profile", "path", "reason"),
    [
        pytest.param(
            {"plugins": {"score": {"enabled": [{"name": "MyScore"}]}}},
            "profiles[0].plugins.score.enabled[0]",
            "MyScore is a score plugin the prediction cannot model",
            id="unknown-score-plugin",
        ),
        pytest.param(
            {
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
            "'RequestedToCapacityRatio': the prediction models LeastAllocated and MostAllocated",
            id="requested-to-capacity-ratio",
        ),
        pytest.param(
            {
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {"scoringStrategy": {"resources": [{"name": "nvidia.com/gpu"}]}},
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0]",
            "'nvidia.com/gpu': the prediction models cpu and memory",
            id="extended-resource",
        ),
        pytest.param(
            {"schedulerName": "batch"},
            "profiles",
            "no profile for default-scheduler",
            id="no-default-profile",
        ),
    ],
)
def test_what_the_prediction_cannot_model_is_refused_by_path(
    profile: dict[str, Any], path: str, reason: str
) -> None:
    """Each unmodelled part is named with its path; the default profile is not silently
    used instead."""
    _, errors = parse_scheduler_config(_config(profile))
    assert [(e.path, e.reason) for e in errors] == [(path, reason)]


def test_the_cli_predicts_with_the_given_profile_and_exits_2_on_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--scheduler-config`` changes where replacements are predicted to land (bin packing
    on the sample), and a file the prediction cannot model exits 2 naming the file and path."""
    import yaml  # noqa: PLC0415 - only this test writes YAML

    argv = ["descheduler", "plan", "--snapshot", str(EXAMPLES / "snapshot.json.gz")]
    argv += ["--policy-config-file", str(EXAMPLES / "policy.yaml"), "--output", "json"]
    assert main(argv) == 0
    default = capsys.readouterr().out
    packing = tmp_path / "scheduler.yaml"
    packing.write_text(yaml.safe_dump(_config(BIN_PACKING)))
    assert main([*argv, "--scheduler-config", str(packing)]) == 0
    assert capsys.readouterr().out != default
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_config({"plugins": {"score": {"enabled": [{"name": "X"}]}}})))
    assert main([*argv, "--scheduler-config", str(bad)]) == 2
    assert f"{bad}: profiles[0].plugins.score.enabled[0]" in capsys.readouterr().err
