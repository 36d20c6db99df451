"""Go-style durations (``30s``, ``1m30s``, ``1.5h``), because kubelet's config uses them.

Operators copy values straight out of a KubeletConfiguration, so we accept exactly what
``time.ParseDuration`` accepts (minus the rarely used negative sign) and format back the
same way in messages.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Return the duration in seconds, or raise ``ValueError`` naming the problem."""
    if text == "0":
        return 0.0
    if not text:
        raise ValueError("empty duration")
    position = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text):
        raise ValueError(f"invalid duration {text!r} (expected Go form like 30s, 1m30s, 500ms)")
    return total


def format_duration(seconds: float) -> str:
    """Format seconds the way Go prints a ``time.Duration`` (``1m30s``, ``500ms``, ``0s``)."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{int(hours)}h"
    if hours or minutes:
        out += f"{int(minutes)}m"
    return out + f"{secs:g}s"
