"""Run ``kubelet-companion`` once as its own process, the way a user does, and capture it.

``KUBECONFIG`` is empty and ``HOME`` points nowhere, so neither a kubeconfig on the machine
running the tests nor ``~/.kube/config`` is picked up: the command is node-only unless its
config names a kubeconfig. A long-running ``agent`` that a test signals or polls is started
with ``subprocess.Popen`` by that test instead.
"""

from __future__ import annotations

import os
import subprocess
import sys

CLI = [sys.executable, "-m", "agent.cli"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The finished process (never raises on a non-zero exit; 60 s at most)."""
    environment = {**os.environ, "KUBECONFIG": "", "HOME": "/nonexistent"}
    return subprocess.run(
        [*CLI, *args], check=False, capture_output=True, text=True, timeout=60, env=environment
    )
