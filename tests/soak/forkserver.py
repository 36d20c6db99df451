"""A fork server for agent processes: the imports paid once, each agent a real process.

``python -m agent.cli agent`` spends a second or more importing (the official client,
dbus-fast, prometheus) before it does anything, several seconds on a loaded machine; a soak
starts the agent again after every kill, a thousand times over. This process imports the
agent once, stays single-threaded, and forks a child per request that runs
``tests.soak.agent_child.run`` — the agent's own CLI entry point, in a process of its own,
with its own pid (logind sees it), fds (its lock dies with it), environment and log file.

Protocol, one JSON object per line: the soak writes ``{"argv": [...], "env": {...},
"log": PATH, "break": NAME|null}`` on stdin and reads ``{"pid": N}`` back. End of input
(the soak went away) kills every child and ends the server. Children are reaped as they
exit, and each one dies with the server (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import random
import signal
import sys
import traceback
from types import FrameType
from typing import Any

import agent.cli
import agent.daemon  # noqa: F401 - imported for the children: this is what the server is for
from tests.soak import agent_child, breaks  # noqa: F401 - likewise

PR_SET_PDEATHSIG = 1
_children: set[int] = set()


def _reap(_signum: int, _frame: FrameType | None) -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _children.discard(pid)


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become the agent, never return."""
    code = 1
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.environ.clear()
        os.environ.update(request["env"])
        random.seed()  # not the server's state: jitter must differ between agents
        code = agent_child.run(list(request["argv"]), request.get("break"))
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> int:
    signal.signal(signal.SIGCHLD, _reap)
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        out.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        _children.add(pid)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
    for pid in list(_children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
