"""Which logind drop-in has the last word on ``InhibitDelayMaxSec``: pure, for agent and doctor.

logind reads ``logind.conf.d`` from four directories, ``/etc``, ``/run``,
``/usr/local/lib`` and ``/usr/lib`` (under ``systemd/``), in that order of priority: a file
name found in several of them is read from the first only, and a ``/dev/null`` symlink
there masks the others. All the names that remain are then applied in the lexical (byte)
order of the file name, whatever their directory, and the last assignment wins. So our
drop-in raises the delay only if no file applied after it sets the key again, and only if
no same-named file in a directory of higher priority hides it.

kubelet writes ``99-kubelet.conf``; our default name, ``99-zz-kubelet-companion.conf``,
sorts after it and after any ``99-kubelet-*.conf`` (``z`` > ``k``). A file that still
sorts later (``99-zzz.conf``) and sets the key overrides us: that is what this module
finds, so the agent and ``doctor`` can say so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

KEY = "InhibitDelayMaxSec"
SECTION = "Login"


@dataclass(frozen=True)
class DropInFile:
    name: str
    """The file name, e.g. ``99-kubelet.conf``: the sort key."""
    rank: int
    """The directory's priority: 0 for ``/etc`` (read first) ... 3 for ``/usr/lib``."""
    path: str
    text: str | None
    """The content; ``None`` for a masked (``/dev/null``), empty or unreadable file."""


@dataclass(frozen=True)
class Override:
    path: str
    value: str | None
    """What it sets ``InhibitDelayMaxSec`` to (``""`` resets it to logind's default);
    ``None`` when it masks ours without setting the key."""
    how: Literal["later", "masks"]
    """``later``: applied after ours; ``masks``: same name in a directory read first."""

    def describe(self) -> str:
        if self.how == "masks":
            return f"{self.path} hides ours (same name, read first)"
        shown = self.value or "(logind's default)"
        return f"{self.path} sets {KEY}={shown} after ours"


def inhibit_delay_setting(text: str | None) -> str | None:
    """The last ``InhibitDelayMaxSec=`` in the ``[Login]`` section, or ``None``."""
    if not text:
        return None
    section = ""
    value = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, equals, rest = line.partition("=")
        if equals and section == SECTION and key.strip() == KEY:
            value = rest.strip()
    return value


def overriding_dropins(ours: DropInFile, files: Iterable[DropInFile]) -> list[Override]:
    """The drop-ins that decide ``InhibitDelayMaxSec`` instead of ``ours``, in the order applied.

    ``files`` are every ``*.conf`` found in the four directories (ours among them or not).
    """
    effective: dict[str, DropInFile] = {}
    for file in sorted(files, key=lambda each: each.rank):
        effective.setdefault(file.name, file)
    overrides = []
    winner = effective.get(ours.name)
    if winner is not None and winner.rank < ours.rank and winner.path != ours.path:
        overrides.append(Override(winner.path, inhibit_delay_setting(winner.text), "masks"))
    for name in sorted(name for name in effective if name.encode() > ours.name.encode()):
        value = inhibit_delay_setting(effective[name].text)
        if value is not None:
            overrides.append(Override(effective[name].path, value, "later"))
    return overrides
