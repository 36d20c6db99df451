"""Stopping a child process the tests or the benchmarks started, spelled once: the harness's
servers (logind, dbus-daemon, Prometheus) and every process a benchmark runs end the same way."""

from __future__ import annotations

import subprocess
from typing import Any


def stop_process(process: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM, then SIGKILL when it has not exited after ``timeout`` seconds; nothing when it
    has exited already. The kill is waited for as long again, so no stop waits unbounded."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)
