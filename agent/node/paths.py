"""The host's filesystem roots, injectable so tests and DaemonSets can move them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.config import HostPathsConfig


@dataclass(frozen=True)
class HostPaths:
    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    etc: Path = Path("/etc")
    run: Path = Path("/run")

    @classmethod
    def from_config(cls, config: HostPathsConfig) -> HostPaths:
        return cls(Path(config.proc), Path(config.sys), Path(config.etc), Path(config.run))

    @property
    def cgroup_root(self) -> Path:
        return self.sys / "fs" / "cgroup"


def read_text(path: Path) -> str | None:
    """The file's text, or ``None`` when it does not exist or cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
