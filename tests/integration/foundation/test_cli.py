"""The console script end to end: exit codes, config errors, version, doctor."""

import json
from pathlib import Path

import pytest

from tests.harness.cli import run_cli

# The host's swap is one for every test process: tests that switch a swap file on, or
# compare what they read with /proc/swaps, run one after another on one xdist worker.
pytestmark = pytest.mark.xdist_group("host-swap")


def test_bad_config_exits_2_and_names_all_four_problems(tmp_path: Path) -> None:
    """Three bad fields and one unknown key: exit 2, each named with its path."""
    config = tmp_path / "agent.yaml"
    config.write_text(
        "metricsBindAddress: nowhere\n"
        "shutdownGracePeriod: 10\n"
        "readiness: {mode: sometimes}\n"
        "colour: blue\n"
    )
    result = run_cli("agent", "--config", str(config))
    assert result.returncode == 2
    for path in (
        "metricsBindAddress:",
        "shutdownGracePeriod:",
        "readiness.mode:",
        "colour: unknown field",
    ):
        assert path in result.stderr
    assert "4 error(s)" in result.stderr


@pytest.mark.parametrize("command", ["doctor", "version", "descheduler"])
def test_every_subcommand_takes_config(command: str, tmp_path: Path) -> None:
    """--config is accepted by every subcommand; a bad file is exit 2 for all of them."""
    config = tmp_path / "bad.yaml"
    config.write_text("nope: 1\n")
    expected = 0 if command == "version" else 2
    assert run_cli(command, "--config", str(config)).returncode == expected


def test_bad_usage_exits_2() -> None:
    """An unknown subcommand is a usage error."""
    assert run_cli("frobnicate").returncode == 2


def test_version_prints_the_version() -> None:
    """version prints the distribution version."""
    result = run_cli("version")
    assert result.returncode == 0
    assert result.stdout.startswith("kubelet-companion ")


def test_descheduler_without_a_policy_is_a_usage_error() -> None:
    """The descheduler needs ``--policy-config-file``; without it, exit 2 naming the flag."""
    result = run_cli("descheduler")
    assert result.returncode == 2
    assert "--policy-config-file" in result.stderr


def test_doctor_prints_a_table_and_json_of_this_machine() -> None:
    """doctor's table and JSON describe this machine; JSON matches /proc/swaps."""
    table = run_cli("doctor")
    assert table.returncode == 0, table.stderr
    for section in ("[node]", "[swap]", "[cgroups]", "[logind]", "[config]", "[warnings]"):
        assert section in table.stdout
    report = json.loads(run_cli("doctor", "--json").stdout)
    swaps = Path("/proc/swaps").read_text().splitlines()[1:]
    assert report["sections"]["swap"]["on"] == bool(swaps)
    assert len(report["sections"]["swap"]["devices"]) == len(swaps)
    assert report["sections"]["cluster"]["mode"] == "node-only"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"nodeName: caf\xe9\n", id="not-utf-8"),
        pytest.param(b"shutdownGracePeriod: !!float\n", id="empty-float"),
        pytest.param(b"!!timestamp\n", id="bare-timestamp"),
    ],
)
def test_a_file_the_parser_chokes_on_exits_2_without_a_traceback(
    content: bytes, tmp_path: Path
) -> None:
    """Bytes that are not UTF-8, or YAML that crashes PyYAML, are a config error: exit 2."""
    config = tmp_path / "agent.yaml"
    config.write_bytes(content)
    result = run_cli("agent", "--config", str(config))
    assert result.returncode == 2
    assert result.stderr.startswith(f"invalid config {config}: 1 error(s)")
    assert "Traceback" not in result.stderr
