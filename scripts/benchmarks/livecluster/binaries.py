"""Where the control plane's binaries are, and what is missing.

None of them comes from a package registry: kube-apiserver, kube-scheduler,
kube-controller-manager (v1.28.7) and upstream's descheduler are built from public source
into ``$KUBE_BIN_DIR`` (default ``~/.cache/kc-e2e/bin``) on a developer's machine; etcd is
Debian's ``etcd-server``. So the benchmark asks here first, and skips with the reason when the
control plane cannot run. Upstream's descheduler is optional: without it ours runs alone.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

CONTROL_PLANE = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")


def bin_dir() -> Path:
    return Path(os.environ.get("KUBE_BIN_DIR") or Path.home() / ".cache" / "kc-e2e" / "bin")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _etcd() -> Path | None:
    for candidate in (os.environ.get("ETCD"), shutil.which("etcd"), "/usr/bin/etcd"):
        if candidate and _executable(Path(candidate)):
            return Path(candidate)
    return None


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    apiserver: Path
    scheduler: Path
    controller_manager: Path
    descheduler: Path | None
    """Upstream's, for the side-by-side runs; ``None`` when it is not built here."""


def find() -> tuple[Binaries | None, str]:
    """The binaries, or ``None`` and why the control plane cannot run (one line)."""
    directory = bin_dir()
    missing = [name for name in CONTROL_PLANE if not _executable(directory / name)]
    etcd = _etcd()
    if etcd is None:
        missing.append("etcd (Debian's etcd-server, or $ETCD)")
    if missing or etcd is None:
        return None, f"missing {', '.join(missing)} in {directory} (see the benchmark's notes)"
    upstream = directory / "descheduler"
    return (
        Binaries(
            etcd=etcd,
            apiserver=directory / "kube-apiserver",
            scheduler=directory / "kube-scheduler",
            controller_manager=directory / "kube-controller-manager",
            descheduler=upstream if _executable(upstream) else None,
        ),
        "",
    )
