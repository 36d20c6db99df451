"""The soak in the suite: a short fixed-seed soak holds every invariant, and a broken agent
is caught by it (so the invariants can fail)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.logind.fixtures import unavailable_reason

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]


def _soak(tmp_path: Path, *args: str) -> tuple[int, str, dict[str, object]]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    summary = tmp_path / "summary.json"
    process = subprocess.run(
        [sys.executable, "-m", "tests.soak", "--quiet", "--json", str(summary), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = process.stdout + process.stderr
    return process.returncode, output, json.loads(summary.read_text())


@pytest.mark.timeout(600)
def test_twenty_scenarios_with_seed_1_hold_every_invariant(tmp_path: Path) -> None:
    """`scripts/soak --runs 20 --seed 1` finds no violation and every invariant is checked."""
    code, output, summary = _soak(
        tmp_path, "--runs", "20", "--seed", "1", "--jobs", "3", "--workdir", str(tmp_path)
    )
    assert code == 0, output
    assert summary["runs"] == 20
    checks = summary["checks"]
    assert isinstance(checks, dict)
    assert all(checks.get(name, 0) > 0 for name in summary["violations"]), checks  # type: ignore[union-attr]


@pytest.mark.timeout(300)
def test_a_lock_taken_again_on_every_logind_restart_is_caught(tmp_path: Path) -> None:
    """With the test-only break that re-locks on logind restarts, the soak reports two locks."""
    # Scenario 0 of seed 1 restarts logind (state kept) while the agent holds its lock.
    code, output, summary = _soak(
        tmp_path,
        *("--runs", "1", "--seed", "1", "--workdir", str(tmp_path)),
        *("--break", "relock-on-logind-restart"),
    )
    assert code == 1, output
    violations = summary["violations"]
    assert isinstance(violations, dict)
    assert violations["one-lock"] > 0, output
    assert "--break relock-on-logind-restart" in output  # the replay line names the break
