"""Starting and killing the agent process of a scenario.

``fork`` (the default) asks a fork server (``forkserver.py``) that has the agent imported
already; ``exec`` starts ``python -m tests.soak.agent_child`` afresh each time, slower but
with nothing shared. Either way the agent is a process of its own that the soak kills with
SIGKILL, and its output goes to one log file per scenario.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Literal

LaunchMode = Literal["fork", "exec"]
_REPO = Path(__file__).resolve().parents[2]


class ForkServer:
    """The client side of one fork server process (one per soak worker)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.soak.forkserver"],
            cwd=_REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def spawn(self, argv: list[str], env: dict[str, str], log: Path, break_name: str | None) -> int:
        request = {"argv": argv, "env": env, "log": str(log), "break": break_name}
        with self._guard:
            stdin: IO[str] | None = self._process.stdin
            stdout: IO[str] | None = self._process.stdout
            if stdin is None or stdout is None:  # pragma: no cover - pipes were asked for
                raise RuntimeError("the fork server has no pipes")
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            reply = stdout.readline()
        if not reply:
            raise RuntimeError("the fork server ended")
        return int(json.loads(reply)["pid"])

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class AgentProcess:
    """One agent process; ``kill`` returns once it is gone (its fds, its lock with it)."""

    def __init__(self, pid: int, popen: subprocess.Popen[bytes] | None) -> None:
        self.pid = pid
        self._popen = popen

    def alive(self) -> bool:
        if self._popen is not None:
            return self._popen.poll() is None
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rpartition(")")[2].split()[0] not in ("Z", "X")

    def kill(self, signum: int = signal.SIGKILL, timeout: float = 10.0) -> None:
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            return
        if self._popen is not None:
            self._popen.wait(timeout)
            return
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"agent {self.pid} still alive {timeout} s after signal {signum}"
                )
            time.sleep(0.005)


class Launcher:
    def __init__(self, mode: LaunchMode, break_name: str | None) -> None:
        self.mode = mode
        self.break_name = break_name
        self._server = ForkServer() if mode == "fork" else None

    def start(self, config: Path, env: dict[str, str], log: Path) -> AgentProcess:
        argv = ["agent", "--config", str(config)]
        if self._server is not None:
            return AgentProcess(self._server.spawn(argv, env, log, self.break_name), None)
        command = [sys.executable, "-m", "tests.soak.agent_child"]
        if self.break_name:
            command += ["--break", self.break_name]
        with log.open("ab") as out:
            popen = subprocess.Popen(
                [*command, "--", *argv], cwd=_REPO, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        return AgentProcess(popen.pid, popen)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
