"""doctor end to end: a logind drop-in applied after ours is named in a warning line."""

import json
from pathlib import Path

from agent.logind.dropin import dropin_text
from tests.harness.cli import run_cli


def doctor_warnings(config: Path) -> list[str]:
    result = run_cli("doctor", "--json", "--config", str(config))
    assert result.returncode == 0, result.stderr
    return [str(warning) for warning in json.loads(result.stdout)["warnings"]]


def test_doctor_warns_about_a_dropin_that_overrides_ours(tmp_path: Path) -> None:
    """A 99-zzz.conf setting InhibitDelayMaxSec in the host's /etc drop-ins is a warning;
    kubelet's 99-kubelet.conf, applied before ours, is not."""
    dropins = tmp_path / "etc" / "systemd" / "logind.conf.d"
    dropins.mkdir(parents=True)
    ours = dropins / "99-zz-kubelet-companion.conf"
    ours.write_text(dropin_text(35))
    (dropins / "99-kubelet.conf").write_text("[Login]\nInhibitDelayMaxSec=5\n")
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"hostPaths: {{etc: {tmp_path / 'etc'}, run: {tmp_path / 'run'}}}\n"
        f"shutdown: {{logindDropInPath: {ours}}}\n"
    )
    assert not [w for w in doctor_warnings(config) if "drop-in" in w]

    (dropins / "99-zzz.conf").write_text("[Login]\nInhibitDelayMaxSec=5\n")
    (warning,) = [w for w in doctor_warnings(config) if "drop-in" in w]
    assert f"{dropins / '99-zzz.conf'} sets InhibitDelayMaxSec=5 after ours" in warning
