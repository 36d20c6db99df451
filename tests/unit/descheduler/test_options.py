"""The descheduler's one options object: ``--config`` and the flags bound to its fields
resolve into it, the flags winning, every bad key and flag named at once, the cross-field
rules judged once on the result, and each default written once (the help shows it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agent.cli import build_parser
from agent.config import ConfigError
from agent.config.durations import format_duration
from agent.config.schema import flag_name
from agent.descheduler.live.command import resolve_options
from agent.descheduler.options import DeschedulerOptions

POLICY = "/etc/kubelet-companion/policy.yaml"


def _resolve(tmp_path: Path, config: str | None, *flags: str) -> DeschedulerOptions:
    argv = ["descheduler", "--policy-config-file", POLICY, *flags]
    if config is not None:
        path = tmp_path / "descheduler.yaml"
        path.write_text(config)
        argv[1:1] = ["--config", str(path)]
    return resolve_options(build_parser().parse_args(argv))


def _errors(tmp_path: Path, config: str | None, *flags: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _resolve(tmp_path, config, *flags)
    return caught.value


def test_a_flag_given_wins_over_the_file_and_the_file_over_the_default(tmp_path: Path) -> None:
    """The file's QPS gives way to the flag's; its spacing, with no flag, stays; what
    neither sets keeps the options' default."""
    options = _resolve(
        tmp_path,
        "clientConnectionQps: 5\nminCycleSpacing: 10s\n",
        "--client-connection-qps=7",
    )
    assert (options.client_connection_qps, options.min_cycle_spacing) == (7.0, 10.0)
    assert options.eviction_concurrency == DeschedulerOptions().eviction_concurrency


def test_a_flag_not_given_leaves_the_files_value(tmp_path: Path) -> None:
    """A switch the command line left out is no "false": the file's ``dryRun: true``,
    ``leaderElect`` and ``prometheusInsecureSkipTLSVerify`` hold."""
    options = _resolve(
        tmp_path,
        "dryRun: true\nleaderElect: true\ndeschedulingInterval: 1m\n"
        "prometheusInsecureSkipTLSVerify: true\n",
    )
    assert options.dry_run
    assert options.leader_elect
    assert options.prometheus_insecure_skip_tls_verify


def test_every_bad_key_and_every_bad_flag_is_named_at_once(tmp_path: Path) -> None:
    """Two bad keys and two bad flags: four errors in one report, each named where it was
    written (a key by its key, a flag by its flag), and the heading names both sources."""
    error = _errors(
        tmp_path,
        "minCycleSpacing: soon\nevictionConcurrency: 0\n",
        "--client-connection-burst=0",
        "--descheduling-interval=ten",
    )
    assert sorted(e.path for e in error.errors) == [
        "--client-connection-burst",
        "--descheduling-interval",
        "evictionConcurrency",
        "minCycleSpacing",
    ]
    assert "descheduler.yaml and descheduler flags" in error.source


def test_cross_field_rules_judge_the_file_and_flags_together(tmp_path: Path) -> None:
    """``leaderElect: true`` in the file needs an interval, and the flag gives it: no error;
    without the flag the rule names ``leaderElect``."""
    options = _resolve(tmp_path, "leaderElect: true\n", "--descheduling-interval=5m")
    assert (options.leader_elect, options.descheduling_interval) == (True, 300.0)
    error = _errors(tmp_path, "leaderElect: true\n")
    assert [e.path for e in error.errors] == ["leaderElect"]


def test_the_lease_timings_follow_the_electors_rule(tmp_path: Path) -> None:
    """A renew deadline past the lease is refused with the elector's own reason, named by
    the lease flag."""
    error = _errors(tmp_path, None, "--leader-elect-renew-deadline=3m")
    (only,) = error.errors
    assert only.path == "--leader-elect-lease-duration"
    assert "greater than renew_deadline" in only.reason


def test_flag_only_settings_are_no_keys_of_the_file(tmp_path: Path) -> None:
    """The Lease's timings and names, and ``--output``, are flags only: the file may not set
    them."""
    error = _errors(tmp_path, "leaseDuration: 10s\noutput: json\n")
    assert sorted(e.path for e in error.errors) == ["leaseDuration", "output"]
    assert all(e.reason.startswith("unknown field") for e in error.errors)


def test_every_bound_flag_is_on_the_command_line() -> None:
    """Each field that declares a flag has it on ``descheduler``, storing into that field."""
    parser = build_parser()
    (descheduler,) = [
        action.choices["descheduler"]
        for action in parser._actions  # argparse keeps its subcommands here
        if getattr(action, "choices", None) and "descheduler" in action.choices
    ]
    options = {
        option: action.dest
        for action in descheduler._actions  # and its options here
        for option in action.option_strings
    }
    bound = {
        flag: field.name
        for field in dataclasses.fields(DeschedulerOptions)
        if (flag := flag_name(field)) is not None
    }
    assert bound
    assert {flag: options.get(flag) for flag in bound} == bound


def test_the_help_shows_the_options_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` shows the Lease timings, the client rate and the spacing the options
    default to (written there only)."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["descheduler", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = DeschedulerOptions()
    for shown in (
        f"(default {format_duration(defaults.lease_duration)})",
        f"(default {format_duration(defaults.renew_deadline)})",
        f"(default {format_duration(defaults.retry_period)})",
        f"({defaults.client_connection_qps:g}; Events",
        f"API request burst ({defaults.client_connection_burst})",
        f"previous one ({format_duration(defaults.min_cycle_spacing)})",
        f"upstream's default: {defaults.lease_namespace})",
    ):
        assert shown in text
