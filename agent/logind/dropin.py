"""Our logind drop-in: the one file that raises ``InhibitDelayMaxSec`` for us.

logind caps every delay lock at ``InhibitDelayMaxSec`` (5 s by default), so a longer
shutdown budget needs a drop-in, as kubelet writes ``99-kubelet.conf``. The file is ours
alone (``99-kubelet-companion.conf``), written atomically so logind can never read half of
it at a reload, and rewritten only when its content would change.
"""

from __future__ import annotations

import math
from pathlib import Path

from agent.node.atomicwrite import write_atomic


def dropin_text(delay_seconds: float) -> str:
    seconds = math.ceil(delay_seconds)
    return (
        "# Written by kubelet-companion: logind must wait this long for the agent's\n"
        "# shutdown delay lock (the graceful shutdown budget plus a margin).\n"
        "[Login]\n"
        f"InhibitDelayMaxSec={seconds}\n"
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
