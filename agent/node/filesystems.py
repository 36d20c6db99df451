"""``statfs(2)`` filesystem magic numbers, which is how runc and kubelet tell cgroup modes apart.

Python's ``os.statvfs`` drops ``f_type``, so we call libc directly. The first member of
``struct statfs`` is ``f_type`` (a ``long`` on every 64-bit Linux ABI we ship for).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from pathlib import Path

CGROUP2_SUPER_MAGIC = 0x63677270
CGROUP_SUPER_MAGIC = 0x0027E0EB
TMPFS_MAGIC = 0x01021994

FsMagic = Callable[[Path], int | None]
"""Returns a path's filesystem magic, or ``None`` when the path does not exist."""

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_STATFS_BUFFER = 256  # larger than struct statfs on every architecture


def statfs_magic(path: Path) -> int | None:
    buffer = ctypes.create_string_buffer(_STATFS_BUFFER)
    if _libc.statfs(os.fsencode(path), buffer) != 0:
        errno = ctypes.get_errno()
        if errno in (2, 20):  # ENOENT, ENOTDIR
            return None
        raise OSError(errno, os.strerror(errno), str(path))
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF
