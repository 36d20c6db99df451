"""A free loopback port for a process a test or a benchmark starts (its health or metrics
endpoint, a stand-in server).

Why a module: the same four lines were written in six test files and two benchmarks.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick; another process
    could take it before ours binds, which on a test machine is rare enough)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
