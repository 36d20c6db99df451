"""Our logind drop-in: the one file that raises ``InhibitDelayMaxSec`` for us.

logind caps every delay lock at ``InhibitDelayMaxSec`` (5 s by default), so a longer
shutdown budget needs a drop-in, as kubelet writes ``99-kubelet.conf``. The file is ours
alone (``99-zz-kubelet-companion.conf``, which logind applies after kubelet's), written
atomically so logind can never read half of it at a reload, and rewritten only when its
content would change. ``scan_dropins`` reads every drop-in logind would merge with ours,
for ``dropin_order`` to tell whether ours has the last word.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from agent.logind.dropin_order import KEY, SECTION, DropInFile
from agent.node.atomicwrite import write_atomic

DROPIN_SUBDIR = "systemd/logind.conf.d"
"""Where logind's drop-ins live under each of its four roots."""
DROPIN_DIRS = tuple(
    f"{root}/{DROPIN_SUBDIR}" for root in ("/etc", "/run", "/usr/local/lib", "/usr/lib")
)
"""logind's drop-in directories, read first to last (a name found twice: the first wins)."""


def dropin_seconds(delay_seconds: float) -> int:
    """``InhibitDelayMaxSec`` as our drop-in sets it: whole seconds, rounded up, so logind
    never waits less than asked. The one place a delay of ours is rounded for logind."""
    return math.ceil(delay_seconds)


def dropin_text(delay_seconds: float) -> str:
    return (
        "# Written by kubelet-companion: logind must wait this long for the agent's\n"
        "# shutdown delay lock (the graceful shutdown budget plus a margin).\n"
        f"[{SECTION}]\n"
        f"{KEY}={dropin_seconds(delay_seconds)}\n"
    )


def write_dropin(path: Path, delay_seconds: float) -> bool:
    """Write the drop-in (dir 0755, file 0644) atomically; return whether it changed."""
    text = dropin_text(delay_seconds)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    write_atomic(path, text.encode(), mode=0o644)
    return True


def dropin_rank(path: Path) -> int:
    """The priority of the directory holding ``path`` (0 for ``/etc`` or anywhere else)."""
    directory = str(path.parent)
    return DROPIN_DIRS.index(directory) if directory in DROPIN_DIRS else 0


def scan_dropins(ours: Path, *, etc: Path, run: Path) -> tuple[DropInFile, list[DropInFile]]:
    """Our drop-in and every ``*.conf`` logind would merge with it.

    ``etc`` and ``run`` are where the host's ``/etc`` and ``/run`` are seen from here (a
    DaemonSet mounts only our own directory; the others then read as empty).
    """
    directories = {
        ours.parent: dropin_rank(ours),
        etc / DROPIN_SUBDIR: 0,
        run / DROPIN_SUBDIR: 1,
        Path(DROPIN_DIRS[2]): 2,
        Path(DROPIN_DIRS[3]): 3,
    }
    files = [
        file for directory, rank in directories.items() for file in _conf_files(directory, rank)
    ]
    mine = DropInFile(ours.name, dropin_rank(ours), str(ours), _read(ours))
    return mine, files


def _conf_files(directory: Path, rank: int) -> list[DropInFile]:
    try:
        names = sorted(entry.name for entry in os.scandir(directory))
    except OSError:  # missing or unreadable: logind finds nothing there either
        return []
    return [
        DropInFile(name, rank, str(directory / name), _read(directory / name))
        for name in names
        if name.endswith(".conf")
    ]


def _read(path: Path) -> str | None:
    """The text of a drop-in; ``None`` when masked (``/dev/null``), missing or unreadable."""
    try:
        if path.is_symlink() and os.path.realpath(path) == os.devnull:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
