"""systemd's object-path escaping for unit names (``bus_label_escape``).

logind never asks for a unit's path: it computes it itself (e.g. to read
``poweroff.target``'s properties), so the stand-in must map names and paths exactly
the way systemd does or logind's calls would land on objects that do not exist.
"""

from __future__ import annotations

UNIT_PATH_PREFIX = "/org/freedesktop/systemd1/unit/"
JOB_PATH_PREFIX = "/org/freedesktop/systemd1/job/"


def escape_label(label: str) -> str:
    """Escape like systemd: every byte outside [A-Za-z0-9] (digits too when first) -> ``_xx``."""
    if not label:
        return "_"
    out: list[str] = []
    for index, byte in enumerate(label.encode()):
        char = chr(byte)
        if char.isascii() and (char.isalpha() or (index > 0 and char.isdigit())):
            out.append(char)
        else:
            out.append(f"_{byte:02x}")
    return "".join(out)


def unescape_label(label: str) -> str:
    """Inverse of :func:`escape_label`."""
    if label == "_":
        return ""
    data = bytearray()
    index = 0
    while index < len(label):
        if label[index] == "_" and _is_hex(label[index + 1 : index + 3]):
            data.append(int(label[index + 1 : index + 3], 16))
            index += 3
        else:
            data.extend(label[index].encode())
            index += 1
    return data.decode(errors="replace")


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def unit_path(unit: str) -> str:
    """``poweroff.target`` -> ``/org/freedesktop/systemd1/unit/poweroff_2etarget``."""
    return UNIT_PATH_PREFIX + escape_label(unit)


def unit_from_path(path: str) -> str | None:
    """Inverse of :func:`unit_path`; ``None`` for paths outside the unit subtree."""
    if not path.startswith(UNIT_PATH_PREFIX) or "/" in path[len(UNIT_PATH_PREFIX) :]:
        return None
    return unescape_label(path[len(UNIT_PATH_PREFIX) :])


def job_path(job_id: int) -> str:
    return f"{JOB_PATH_PREFIX}{job_id}"
