"""Bad args of CriticalAddonRescue and NodeShutdownRecovery, and bad event-driven flags, exit
2 from the command line with the field's path and no traceback, before any connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli import build_parser
from agent.descheduler.live.command import resolve_options
from tests.integration.descheduler.test_cli import _run

HEAD = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n"


def _plugin(name: str, point: str, args: str) -> str:
    return (
        f"{HEAD}  pluginConfig:\n  - name: {name}\n    args: {args}\n"
        f"  plugins:\n    {point}:\n      enabled: [{name}]\n"
    )


@pytest.mark.parametrize(
    ("policy", "flags", "expected"),
    [
        pytest.param(
            _plugin("CriticalAddonRescue", "balance", "{taintTimeoutSeconds: 0}"),
            (),
            "profiles[0].pluginConfig[0].args.taintTimeoutSeconds: must be >= 1",
            id="rescue-timeout",
        ),
        pytest.param(
            _plugin("NodeShutdownRecovery", "deschedule", "{notReadySeconds: -1}"),
            (),
            "profiles[0].pluginConfig[0].args.notReadySeconds: must be >= 0",
            id="recovery-not-ready-seconds",
        ),
        pytest.param(
            _plugin("NodeShutdownRecovery", "balance", "{}"),
            (),
            "NodeShutdownRecovery",
            id="recovery-at-the-wrong-extension-point",
        ),
        pytest.param(HEAD, ("--min-cycle-spacing", "soon"), "--min-cycle-spacing", id="spacing"),
    ],
)
def test_bad_input_exits_2_naming_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    flags: tuple[str, ...],
    expected: str,
) -> None:
    """Exit 2, the path and the reason on stderr, no traceback."""
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    code, _, err = _run(capsys, "--policy-config-file", str(path), *flags)
    assert code == 2
    assert expected in err
    assert "Traceback" not in err


def test_event_driven_flags_reach_the_run_options(tmp_path: Path) -> None:
    """``--event-driven-cycles --min-cycle-spacing 45s`` turn the triggers on, 45 s apart."""
    path = tmp_path / "policy.yaml"
    path.write_text(HEAD)
    args = build_parser().parse_args(
        [
            "descheduler",
            "--policy-config-file",
            str(path),
            "--event-driven-cycles",
            "--min-cycle-spacing",
            "45s",
        ]
    )
    options = resolve_options(args)
    assert (options.event_driven_cycles, options.min_cycle_spacing) == (True, 45.0)


@pytest.mark.parametrize(
    ("flags", "config", "expected"),
    [
        pytest.param((), "", True, id="on-by-default"),
        pytest.param(("--implicit-rollout-budgets=false",), "", False, id="flag-off"),
        pytest.param(("--implicit-rollout-budgets",), "", True, id="bare-flag-on"),
        pytest.param((), "implicitRolloutBudgets: false\n", False, id="config-off"),
        pytest.param(
            ("--implicit-rollout-budgets=true",),
            "implicitRolloutBudgets: false\n",
            True,
            id="flag-wins",
        ),
    ],
)
def test_implicit_budgets_flag_and_config_reach_the_run_options(
    tmp_path: Path, flags: tuple[str, ...], config: str, expected: bool
) -> None:
    """Implicit budgets are on unless ``--implicit-rollout-budgets=false`` or
    ``implicitRolloutBudgets: false`` in ``--config`` turns them off; the flag wins."""
    path = tmp_path / "policy.yaml"
    path.write_text(HEAD)
    extra: list[str] = []
    if config:
        config_file = tmp_path / "config.yaml"
        config_file.write_text(config)
        extra = ["--config", str(config_file)]
    args = build_parser().parse_args(
        ["descheduler", *extra, "--policy-config-file", str(path), *flags]
    )
    assert resolve_options(args).implicit_rollout_budgets is expected


def test_a_bad_implicit_budgets_value_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value that is not a boolean names the flag, exit 2, before any connection."""
    path = tmp_path / "policy.yaml"
    path.write_text(HEAD)
    code, _, err = _run(
        capsys, "--policy-config-file", str(path), "--implicit-rollout-budgets=sometimes"
    )
    assert code == 2
    assert "--implicit-rollout-budgets: not a boolean: 'sometimes'" in err
