"""Commands that never reach a cluster do not import the Kubernetes client: building the
parser (every command's flags) stays light, and the client is imported by the command that
talks to the API server, when it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import contextlib, io, sys
from agent.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(sorted(name for name in ("kubernetes", "urllib3") if name in sys.modules))
"""


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["version"], id="version"),
        pytest.param(["--help"], id="help"),
        pytest.param(["readiness", "--help"], id="readiness-help"),
    ],
)
def test_a_command_without_a_cluster_leaves_the_client_unimported(argv: list[str]) -> None:
    """After ``kubelet-companion <argv>`` in a fresh interpreter, neither ``kubernetes`` nor
    ``urllib3`` is in ``sys.modules``."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]", result.stdout
