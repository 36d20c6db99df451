"""What the real node needs on this machine, and one line saying what is missing.

The kubelet, kube-apiserver, kube-scheduler and kube-controller-manager come from no
package registry: they are built from public source into ``$KUBE_BIN_DIR`` (default
``~/.cache/kc-e2e/bin``, see ``livecluster/binaries.py``). The rest is Debian's: etcd
(``etcd-server``), containerd and ``ctr`` (``containerd``), ``runc``, the CNI plugins
(``containernetworking-plugins``), ``busybox-static`` for the images, ``iproute2`` for the
bridge, and ``dbus-daemon`` with ``systemd-logind`` for the real logind on a private bus.
Everything runs as root (the kubelet, containerd, and logind's mount namespace).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from scripts.benchmarks.livecluster import binaries
from tests.harness.logind.fixtures import unavailable_reason

CNI_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
PACKAGES = {
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "ip": "iproute2",
    "busybox": "busybox-static",
}
APT = "apt-get install containerd runc containernetworking-plugins busybox-static etcd-server"


@dataclass(frozen=True)
class Tools:
    control_plane: binaries.Binaries
    kubelet: Path
    containerd: Path
    ctr: Path
    runc: Path
    ip: Path
    busybox: Path


def _which(command: str) -> Path | None:
    found = shutil.which(command, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/bin")
    return Path(found) if found else None


def find() -> tuple[Tools | None, str]:
    """The tools, or ``None`` and why the real node cannot run here (one line)."""
    if os.geteuid() != 0:
        return None, "needs root (the kubelet, containerd and the logind harness)"
    control_plane, missing_control_plane = binaries.find()
    kubelet = binaries.bin_dir() / "kubelet"
    missing = [missing_control_plane] if missing_control_plane else []
    if not (kubelet.is_file() and os.access(kubelet, os.X_OK)):
        missing.append(f"kubelet in {binaries.bin_dir()} (built from source, like the rest)")
    found = {command: _which(command) for command in PACKAGES}
    absent = [f"{c} ({package})" for c, package in PACKAGES.items() if found[c] is None]
    absent += [
        f"{CNI_DIR / plugin} (containernetworking-plugins)"
        for plugin in CNI_PLUGINS
        if not (CNI_DIR / plugin).exists()
    ]
    if absent:
        missing.append(f"{', '.join(absent)}: {APT}")
    if (logind := unavailable_reason()) is not None:
        missing.append(logind)
    if missing or control_plane is None:
        return None, "; ".join(missing)
    return (
        Tools(
            control_plane=control_plane,
            kubelet=kubelet,
            **{command: path for command, path in found.items() if path is not None},
        ),
        "",
    )
