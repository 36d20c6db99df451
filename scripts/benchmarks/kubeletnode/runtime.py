"""containerd (Debian's, with runc) for one kubelet, in a directory of its own.

Its socket, root, state, CNI configuration and host-local IP store all live under the node's
directory, so nothing it writes mixes with another containerd on the machine. The cgroup
driver is cgroupfs (the kubelet's, no systemd as PID 1 needed). ``restrict_oom_score_adj``
clamps each container's ``oom_score_adj`` to containerd's own: a root without
``CAP_SYS_RESOURCE`` (as in some VMs) cannot lower it, and without the clamp every sandbox
(``-998``) fails to start.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from scripts.benchmarks.kubeletnode.image import SANDBOX_IMAGE

CNI_NETWORK = "kc-bench"
NAMESPACE = "k8s.io"
"""The containerd namespace the CRI plugin (and so the kubelet) uses."""


def containerd_config(directory: Path, runc: Path, cni_bin: Path) -> str:
    """containerd 1.6's TOML for a state directory of its own."""
    quoted = {
        key: json.dumps(str(value))  # a TOML basic string is a JSON string
        for key, value in {
            "root": directory / "root",
            "state": directory / "state",
            "socket": directory / "containerd.sock",
            "opt": directory / "opt",
            "cni_conf": directory / "cni" / "net.d",
            "cni_bin": cni_bin,
            "runc": runc,
        }.items()
    }
    return f"""version = 2
root = {quoted["root"]}
state = {quoted["state"]}

[grpc]
  address = {quoted["socket"]}

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "{SANDBOX_IMAGE}"
    disable_apparmor = true
    enable_selinux = false
    restrict_oom_score_adj = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = {quoted["runc"]}
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = {quoted["cni_bin"]}
      conf_dir = {quoted["cni_conf"]}
      max_conf_num = 1
  [plugins."io.containerd.internal.v1.opt"]
    path = {quoted["opt"]}
"""


def cni_config(bridge: str, subnet: str, gateway: str, ipam_dir: Path) -> dict[str, object]:
    """One bridge network, the node's address as its gateway, no masquerade, no iptables."""
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(ipam_dir),
                    "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            }
        ],
    }


class Ctr:
    """``ctr`` against one containerd, in the CRI's namespace (argument lists, no shell)."""

    def __init__(self, ctr: Path, socket: Path) -> None:
        self.prefix = [str(ctr), "--address", str(socket), "--namespace", NAMESPACE]

    def run(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            [*self.prefix, *args], capture_output=True, text=True, check=False, timeout=120
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: {done.stderr.strip()[:300]}")
        return done.stdout

    def images(self) -> set[str]:
        return set(self.run("images", "ls", "-q").split())

    def containers(self) -> list[str]:
        return self.run("containers", "ls", "-q", check=False).split()
