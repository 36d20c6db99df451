"""Replacing a file so that a crash or power cut never leaves half of it.

The data goes to a temp file in the same directory, is fsynced, renamed over the target,
and the directory is fsynced too: a reader (logind at a reload, the agent after a reboot)
sees either the old content or the new, never a torn file. Used for every file we own.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` (parent dirs created 0755, the file gets ``mode``)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        Path(temp_name).replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(temp_name).unlink()
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
