"""Does tmpfs honour ``noswap``? kubelet's rule, including its real probe mount.

Without ``noswap`` a memory-backed volume (secrets, ``emptyDir.medium: Memory``) can be
swapped to disk. kubelet answers: false in a user namespace, true from kernel 6.4, else
mount a scratch tmpfs with ``noswap`` and see. The probe uses mount(2) through libc, so the
agent needs no ``mount`` binary and builds no command line.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

NOSWAP_KERNEL = (6, 4, 0)

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_MNT_DETACH = 2


@dataclass(frozen=True)
class NoswapSupport:
    supported: bool
    reason: str


def probe_noswap_mount(scratch_parent: Path | None = None) -> NoswapSupport:
    """Mount a tmpfs with ``noswap`` in a new temp dir, unmount it, remove the dir."""
    target = Path(tempfile.mkdtemp(prefix="kc-noswap-probe-", dir=scratch_parent))
    try:
        rc = _libc.mount(b"tmpfs", os.fsencode(target), b"tmpfs", 0, b"noswap")
        if rc != 0:
            errno = ctypes.get_errno()
            return NoswapSupport(False, f"probe mount failed: {os.strerror(errno)}")
        if _libc.umount2(os.fsencode(target), 0) != 0:
            # Never leave the probe mounted: detach lazily if a plain unmount is refused.
            _libc.umount2(os.fsencode(target), _MNT_DETACH)
        return NoswapSupport(True, "probe mount with noswap succeeded")
    finally:
        target.rmdir()


def noswap_support(
    kernel_version: tuple[int, int, int], in_user_namespace: bool, *, probe: bool = True
) -> NoswapSupport:
    if in_user_namespace:
        return NoswapSupport(False, "running in a user namespace")
    if kernel_version >= NOSWAP_KERNEL:
        return NoswapSupport(True, "kernel >= 6.4")
    if not probe:
        return NoswapSupport(False, "kernel < 6.4 and the probe was not run")
    return probe_noswap_mount()
