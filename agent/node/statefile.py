"""Small JSON state files, written so that a crash or power cut never leaves half a file.

The shutdown record is written while the node goes down, which is exactly when a crash
or power cut is most likely, so every write is atomic (``agent.node.atomicwrite``).

A file that is not valid JSON is not ours to silently overwrite: ``quarantine`` moves it
aside (keeping it for a human) before a fresh one is written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent.node.atomicwrite import fsync_directory, write_atomic


class StateFileUnreadable(ValueError):
    """The file exists but does not hold a JSON document."""


def write_json_atomic(path: Path, document: Any, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``document`` atomically (temp file, fsync, rename, dir fsync)."""
    write_atomic(path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode(), mode=mode)


def read_json(path: Path) -> Any | None:
    """The parsed document; ``None`` without a file; ``StateFileUnreadable`` if not JSON."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return json.loads(data)
    except ValueError as error:
        raise StateFileUnreadable(f"{path}: not valid JSON ({error})") from None


def quarantine(path: Path) -> Path:
    """Move an unusable file aside as ``<name>.corrupt-<unix time>``; return the new path."""
    target = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    path.replace(target)
    fsync_directory(path.parent)
    return target
