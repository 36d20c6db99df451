"""A FIFO fed from a thread: what ``<(...)`` hands a command, for tests of bounded reads.

The writer waits for a reader without blocking (``O_NONBLOCK`` opens fail with ``ENXIO``
until one opens the FIFO), so a test whose command never opens it still ends; it stops
writing when the reader goes (``BrokenPipeError``: a reader that refused the input early).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path

_POLL = 0.01


@contextlib.contextmanager
def fed_fifo(path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO at ``path`` that gives ``data`` to the first reader, then end of file."""
    os.mkfifo(path)
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise
                stop.wait(_POLL)
                continue
            os.set_blocking(fd, True)
            try:
                with contextlib.suppress(BrokenPipeError):
                    _write_all(fd, data)
            finally:
                os.close(fd)
            return

    writer = threading.Thread(target=feed, name=f"fifo-{path.name}", daemon=True)
    writer.start()
    try:
        yield path
    finally:
        stop.set()
        writer.join(timeout=30)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
