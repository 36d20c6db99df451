"""Run ``kubelet-companion`` once as its own process, the way a user does, and capture it.

``KUBECONFIG`` is empty and ``HOME`` points nowhere, so neither a kubeconfig on the machine
running the tests nor ``~/.kube/config`` is picked up: the command is node-only unless its
config names a kubeconfig. A long-running ``agent`` that a test signals or polls is started
with ``subprocess.Popen`` by that test instead, and waited for with ``wait_for_output``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from tests.harness.waiting import wait_until_blocking

CLI = [sys.executable, "-m", "agent.cli"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The finished process (never raises on a non-zero exit; 60 s at most)."""
    environment = {**os.environ, "KUBECONFIG": "", "HOME": "/nonexistent"}
    return subprocess.run(
        [*CLI, *args], check=False, capture_output=True, text=True, timeout=60, env=environment
    )


def wait_for_output(
    process: subprocess.Popen[Any], output: Callable[[], str], text: str, timeout: float
) -> None:
    """Wait until ``text`` shows in ``output()`` (what ``process`` wrote so far); fail with
    that output if the process ends first, or after ``timeout`` seconds."""

    def shown() -> bool:
        seen = output()
        if text in seen:
            return True
        assert process.poll() is None, f"exit {process.returncode} before {text!r}:\n{seen}"
        return False

    wait_until_blocking(shown, lambda: f"{text!r} in:\n{output()}", timeout, interval=0.05)
