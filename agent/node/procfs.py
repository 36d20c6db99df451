"""Running psutil against an injected ``/proc``.

psutil reads ``psutil.PROCFS_PATH`` (a module global) so that containers can look at the
host's ``/proc``. Swapping a global is only safe under a lock: every psutil call that must
see the injected root goes through ``psutil_procfs``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

_lock = threading.Lock()


@contextmanager
def psutil_procfs(proc_root: Path) -> Iterator[None]:
    with _lock:
        previous = psutil.PROCFS_PATH
        psutil.PROCFS_PATH = str(proc_root)
        try:
            yield
        finally:
            psutil.PROCFS_PATH = previous
