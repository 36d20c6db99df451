"""Reading and writing single cgroup files without ever leaving the directory we mean.

A path is walked one component at a time from an already open directory, each step with
``O_NOFOLLOW | O_DIRECTORY`` and on the same mount as the start: the same ``st_dev`` and,
from ``/proc/self/fdinfo``, the same mount ID (which also catches a bind mount of a
directory of the same filesystem). So a symlink, a ``..`` or a mount planted anywhere in the
tree cannot redirect a write, and nothing is resolved twice (no gap between a check and the
use). Components are validated before any syscall: no empty names, no ``.``/``..``, no
``/`` or NUL. Files are opened without ``O_CREAT``: we only ever change files the kernel (or
a fixture) already made, and with ``O_NONBLOCK`` so a FIFO cannot hang us.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted under a cgroup file's name must fail the open, not hang it.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE_FLAGS = os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_MAX_READ = 65536


class CgroupPathError(ValueError):
    """A cgroup path was refused (it would leave the tree, or names something odd)."""


def check_component(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise CgroupPathError(f"refusing cgroup path component {name!r}")
    return name


def mount_id(fd: int) -> int | None:
    """The mount an open fd lives on (``mnt_id`` in fdinfo), ``None`` if /proc cannot say."""
    try:
        with Path(f"/proc/self/fdinfo/{fd}").open(encoding="ascii") as info:
            for line in info:
                if line.startswith("mnt_id:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@contextlib.contextmanager
def open_directory(base: Path, components: Sequence[str]) -> Iterator[int]:
    """An fd for ``base/<components...>``, reached without following any symlink.

    ``base`` itself is trusted configuration (``/sys/fs/cgroup`` or its host mount).
    """
    for name in components:
        check_component(name)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        device, mount = os.fstat(fd).st_dev, mount_id(fd)
        for name in components:
            try:
                child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as error:
                # ELOOP/ENOTDIR here mean a symlink or a file where a directory should be.
                raise CgroupPathError(f"cannot enter {name!r}: {error.strerror}") from error
            os.close(fd)
            fd = child
            if os.fstat(fd).st_dev != device or mount_id(fd) != mount:
                raise CgroupPathError(f"{name!r} is a mount point, not part of the tree")
        yield fd
    finally:
        os.close(fd)


def open_regular(directory_fd: int, name: str) -> int | None:
    """An fd of a regular file in an open directory, for the caller to keep and close;
    ``None`` when it is missing, a symlink or not a regular file."""
    check_component(name)
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=directory_fd)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def reread(fd: int) -> str:
    """A kept file's whole text, read again from its start.

    A cgroup file makes its content afresh on every read from offset 0, so one ``pread``
    replaces an open, a stat, a read and a close. Raises ``OSError`` once the cgroup is gone
    (``ENODEV``).
    """
    return os.pread(fd, _MAX_READ, 0).decode("utf-8", "replace")


def read_file(directory_fd: int, name: str) -> str | None:
    """A small file's text, or ``None`` when it is missing, a symlink or unreadable."""
    fd = open_regular(directory_fd, name)
    if fd is None:
        return None
    try:
        return os.read(fd, _MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(directory_fd: int, name: str, text: str) -> None:
    """Replace an existing regular file's content; refuse symlinks and anything else."""
    check_component(name)
    try:
        fd = os.open(name, _WRITE_FLAGS, dir_fd=directory_fd)
    except OSError as error:
        raise CgroupPathError(f"cannot open {name!r} for writing: {error.strerror}") from error
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CgroupPathError(f"{name!r} is not a regular file")
        data = text.encode()
        # cgroup files take one write(2) per value; a short write is a failure.
        if os.write(fd, data) != len(data):
            raise OSError(f"short write to {name!r}")
    finally:
        os.close(fd)
