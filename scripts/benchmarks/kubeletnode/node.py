"""``RealNode``: the control plane, containerd and a real kubelet up, and everything torn down.

The node registers as ``name`` with the address of its CNI bridge (a kubelet refuses a
loopback node IP, and pods reach it there); its kubelet listens on that address only, on a
free port, and lets the API server in without a client certificate (anonymous, always
allowed: nothing outside this machine reaches the bridge). It registers with the taints it
is given (the readiness gate's, to measure its lift), runs with ``shutdownGracePeriod: 0``
(one shutdown manager: the agent), ``failSwapOn: false``, no image garbage collection (the
images are built here and cannot be pulled again) and no iptables chains of its own.

``stop`` leaves the machine as it found it: the pods are deleted through the kubelet (their
containers stopped, their sandboxes' networks torn down by CNI), then the kubelet,
containerd's leftovers, the shims, mounts and network namespaces under the node's
directory, the bridge, the (empty) ``kubepods`` cgroups, the pod log directories the kubelet
made, the control plane, and the sysctls the kubelet and the bridge plugin change are
restored. Every process is stopped by the pid it was started with.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from scripts.benchmarks.kubeletnode.image import write_images
from scripts.benchmarks.kubeletnode.requirements import CNI_DIR, Tools
from scripts.benchmarks.kubeletnode.runtime import Ctr, cni_config, containerd_config
from scripts.benchmarks.livecluster.api import Api
from scripts.benchmarks.livecluster.controlplane import STOP_SECONDS, ControlPlane, free_port
from tests.harness.childprocess import stop_process

BRIDGE = "kc-bench0"
SUBNET = "10.244.78.0/24"
NODE_IP = "10.244.78.1"
CONTROLLERS = (
    "deployment,replicaset,daemonset,disruption,serviceaccount,garbagecollector,nodelifecycle,podgc"
)
"""What a one-node cluster needs: the workload's controllers, the node lifecycle controller
(it lifts the not-ready taint a new Node carries), and pod garbage collection."""
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
)
"""What the kubelet (its kernel tunables) and the bridge plugin (forwarding) rewrite."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
POD_LOGS = Path("/var/log/pods")
CONTAINER_LOGS = Path("/var/log/containers")
NETNS_PIN = re.compile(r"/var/run/netns/cni-[0-9a-f-]+")
"""Where the CRI pins a sandbox's network namespace (named in the container's spec)."""
PodFilter = Callable[[dict[str, Any]], bool]


class NodeError(RuntimeError):
    pass


def kubelet_config(
    *, socket: Path, port: int, healthz_port: int, taints: tuple[dict[str, str], ...]
) -> dict[str, Any]:
    """The kubelet's defaults but for what this machine needs (its runtime, the cgroupfs
    driver, swap present, no image GC, no iptables, its address) and what the agent needs
    (no shutdown manager of its own, the gate's taint at registration). The periods stay
    the kubelet's own (pod resync 1 min, PLEG relist 1 s): they set how soon it acts on
    a delete, which the benchmark measures."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "containerRuntimeEndpoint": f"unix://{socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": True,
        "cgroupRoot": "/",
        "enforceNodeAllocatable": ["pods"],
        "failSwapOn": False,
        "shutdownGracePeriod": "0s",
        "shutdownGracePeriodCriticalPods": "0s",
        "address": NODE_IP,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "registerNode": True,
        "registerWithTaints": list(taints),
        "makeIPTablesUtilChains": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "2%",
            "imagefs.available": "2%",
            "nodefs.inodesFree": "2%",
        },
        "serializeImagePulls": False,
        "resolvConf": "/etc/resolv.conf",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "maxPods": 50,
    }


class RealNode:
    """One real node named ``name``; ``start`` brings it up, ``stop`` cleans up after it."""

    def __init__(
        self,
        tools: Tools,
        directory: Path,
        name: str,
        *,
        register_with_taints: tuple[dict[str, str], ...] = (),
    ) -> None:
        self.tools = tools
        self.directory = directory
        self.name = name
        self.register_with_taints = register_with_taints
        self.control_plane = ControlPlane(
            tools.control_plane,
            directory / "control-plane",
            nodes=(name,),
            controllers=CONTROLLERS,
        )
        self.runtime_dir = directory / "containerd"
        self.kubelet_dir = directory / "kubelet"
        self.socket = self.runtime_dir / "containerd.sock"
        self.ctr = Ctr(tools.ctr, self.socket)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, IO[bytes]] = {}
        self.saved_sysctls: dict[str, str] = {}
        self.pod_logs_before: set[str] = set()
        self.container_logs_before: set[str] = set()
        self.bridge_made = False
        self.netns: set[str] = set()

    @property
    def api(self) -> Api:
        return self.control_plane.api()

    @property
    def kubeconfig(self) -> Path:
        """The administrator's (``system:masters``)."""
        return self.control_plane.kubeconfig

    # -- start ------------------------------------------------------------------------

    def start(self) -> None:
        self._refuse_second_kubelet()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.saved_sysctls = {name: _read_sysctl(name) for name in SYSCTLS}
        self.pod_logs_before = _names(POD_LOGS)
        self.container_logs_before = _names(CONTAINER_LOGS)
        self.control_plane.start()
        self._start_containerd()
        self._bridge()
        self._start_kubelet()

    def _refuse_second_kubelet(self) -> None:
        """Two kubelets would share ``kubepods`` and fight over its cgroups."""
        taken = CGROUP_ROOT / "memory" / "kubepods"
        if taken.is_dir() and any(taken.glob("**/pod*")):
            raise NodeError(f"pods of another kubelet are in {taken}; stop it first")
        if (Path("/sys/class/net") / BRIDGE).exists():
            raise NodeError(f"the bridge {BRIDGE} exists: is another run still up?")

    def _start_containerd(self) -> None:
        for sub in ("root", "state", "opt", "cni/net.d", "cni/ipam"):
            (self.runtime_dir / sub).mkdir(parents=True, exist_ok=True)
        config = self.runtime_dir / "config.toml"
        config.write_text(containerd_config(self.runtime_dir, self.tools.runc, CNI_DIR))
        network = cni_config(BRIDGE, SUBNET, NODE_IP, self.runtime_dir / "cni" / "ipam")
        (self.runtime_dir / "cni" / "net.d" / "10-kc-bench.conflist").write_text(
            json.dumps(network, indent=1)
        )
        self._spawn("containerd", [str(self.tools.containerd), "--config", str(config)])
        self._wait("containerd", lambda: self.ctr.run("version", check=False) != "")
        archives = write_images(self.runtime_dir / "images")
        present = self.ctr.images()
        for image, archive in archives.items():
            if image not in present:
                self.ctr.run("images", "import", str(archive))

    def _bridge(self) -> None:
        ip = str(self.tools.ip)
        prefix = SUBNET.partition("/")[2]
        _run([ip, "link", "add", BRIDGE, "type", "bridge"])
        self.bridge_made = True
        _run([ip, "addr", "add", f"{NODE_IP}/{prefix}", "dev", BRIDGE])
        _run([ip, "link", "set", BRIDGE, "up"])

    def _start_kubelet(self) -> None:
        self.kubelet_dir.mkdir(parents=True, exist_ok=True)
        config = self.kubelet_dir / "config.json"
        config.write_text(
            json.dumps(
                kubelet_config(
                    socket=self.socket,
                    port=free_port(),
                    healthz_port=free_port(),
                    taints=self.register_with_taints,
                ),
                indent=1,
            )
        )
        kubeconfig = self.kubelet_dir / "kubeconfig"
        token = self.control_plane.node_tokens[self.name]
        self.control_plane.write_kubeconfig(kubeconfig, token, f"system:node:{self.name}")
        started = time.time()
        self._spawn(
            "kubelet",
            [
                str(self.tools.kubelet),
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.kubelet_dir / 'root'}",
                f"--cert-dir={self.kubelet_dir / 'pki'}",
                f"--hostname-override={self.name}",
                f"--node-ip={NODE_IP}",
                "--v=2",
            ],
        )
        self._wait("the node Ready", lambda: self._ready_since(started), timeout=120)

    def _ready_since(self, since: float) -> bool:
        status, node = self.api.request("GET", f"/api/v1/nodes/{self.name}", timeout=5)
        if status != 200:
            return False
        for condition in (node.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") == "True":
                beat = condition.get("lastHeartbeatTime") or ""
                return bool(beat) and _epoch(beat) >= int(since)
        return False

    # -- stop -------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Tear everything down; each step runs even if one before it failed. Returns what
        could not be cleaned (empty when the machine is as it was)."""
        problems: list[str] = []
        steps: list[tuple[str, Callable[[], None]]] = [
            ("pods deleted through the kubelet", self._delete_pods),
            ("kubelet stopped", lambda: self._stop("kubelet")),
            ("containerd's containers removed", self._remove_containers),
            ("containerd stopped", lambda: self._stop("containerd")),
            ("containerd shims stopped", self._kill_shims),
            ("network namespaces removed", self._remove_netns),
            ("mounts under the node's directory removed", self._unmount),
            ("bridge removed", self._remove_bridge),
            ("kubepods cgroups removed", self._remove_cgroups),
            ("pod logs removed", self._remove_pod_logs),
            ("control plane stopped", self.control_plane.stop),
            ("sysctls restored", self._restore_sysctls),
        ]
        for what, step in steps:
            try:
                step()
            except Exception as error:  # noqa: BLE001 - every step runs; reported below
                problems.append(f"{what}: {error}")
        for log in self.logs.values():
            log.close()
        self.logs.clear()
        return problems

    def _delete_pods(self) -> None:
        if "kubelet" not in self.processes or self.processes["kubelet"].poll() is not None:
            return
        api = self.api
        selector = {"fieldSelector": f"spec.nodeName={self.name}"}
        for kind in ("deployments", "daemonsets"):
            for namespace in ("default", "kube-system"):
                api.request(
                    "DELETE",
                    f"/apis/apps/v1/namespaces/{namespace}/{kind}",
                    params={"propagationPolicy": "Background"},
                )
        status, pods = api.request("GET", "/api/v1/pods", params=selector)
        for pod in (pods or {}).get("items") or [] if status == 200 else []:
            meta = pod["metadata"]
            api.request(
                "DELETE",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                {"gracePeriodSeconds": 3},
            )

        def gone() -> bool:
            status, left = api.request("GET", "/api/v1/pods", params=selector, timeout=5)
            return status == 200 and not left.get("items")

        self._wait("the node's pods gone", gone, timeout=60)

    def _remove_containers(self) -> None:
        """Whatever the kubelet left in containerd, killed and removed; the network
        namespaces their sandboxes were pinned at are noted for ``_remove_netns``."""
        if self.processes.get("containerd") is None:
            return
        containers = self.ctr.containers()
        for container in containers:
            info = self.ctr.run("containers", "info", container, check=False)
            self.netns.update(NETNS_PIN.findall(info))
        for container in containers:
            self.ctr.run("tasks", "kill", "--signal", "SIGKILL", container, check=False)
        for container in containers:
            self.ctr.run("tasks", "rm", "--force", container, check=False)
            self.ctr.run("containers", "rm", container, check=False)

    def _kill_shims(self) -> None:
        """Shims outlive containerd by design; ours are the ones given our socket."""
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and b"containerd-shim" in argv[0] and str(self.socket).encode() in argv:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(cmdline.parent.name), signal.SIGKILL)

    def _remove_netns(self) -> None:
        """The pinned namespaces of sandboxes that were still there at the end (none when
        the kubelet tore every pod down)."""
        for pin in sorted(self.netns):
            subprocess.run(["umount", pin], check=False, capture_output=True)
            Path(pin).unlink(missing_ok=True)
        self.netns.clear()

    def _unmount(self) -> None:
        for mount in sorted(_mounts_under(self.directory), reverse=True):
            subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
        if left := _mounts_under(self.directory):
            raise NodeError(f"{len(left)} mounts left, e.g. {left[0]}")

    def _remove_bridge(self) -> None:
        if self.bridge_made:
            subprocess.run(
                [str(self.tools.ip), "link", "del", BRIDGE], check=False, capture_output=True
            )
            self.bridge_made = False

    def _remove_cgroups(self) -> None:
        left = []
        for controller in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
            top = controller / "kubepods"
            if not top.is_dir():
                continue
            for directory in sorted(top.glob("**/"), key=lambda p: len(p.parts), reverse=True):
                try:
                    directory.rmdir()
                except OSError:
                    left.append(str(directory))
        if left:
            raise NodeError(f"{len(left)} cgroups still in use, e.g. {left[0]}")

    def _remove_pod_logs(self) -> None:
        for name in _names(CONTAINER_LOGS) - self.container_logs_before:
            (CONTAINER_LOGS / name).unlink(missing_ok=True)
        for name in _names(POD_LOGS) - self.pod_logs_before:
            subprocess.run(
                ["rm", "-rf", "--one-file-system", "--", str(POD_LOGS / name)], check=False
            )

    def _restore_sysctls(self) -> None:
        for name, value in self.saved_sysctls.items():
            if _read_sysctl(name) != value:
                (Path("/proc/sys") / name).write_text(value + "\n")
        self.saved_sysctls = {}

    # -- processes --------------------------------------------------------------------

    def _spawn(self, name: str, command: list[str]) -> None:
        log = (self.directory / f"{name}.log").open("ab")
        self.logs[name] = log
        self.processes[name] = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            stop_process(process, STOP_SECONDS)

    def _wait(self, what: str, check: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise NodeError(
                        f"{name} exited with {process.returncode} while waiting for {what}; "
                        f"see {self.directory / (name + '.log')}"
                    )
            try:
                if check():
                    return
            except (OSError, RuntimeError):
                pass
            time.sleep(0.3)
        raise NodeError(f"{what}: not after {timeout:.0f} s (logs in {self.directory})")


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NodeError(f"{' '.join(command)}: {done.stderr.strip()}")


def _read_sysctl(name: str) -> str:
    return (Path("/proc/sys") / name).read_text().strip()


def _names(directory: Path) -> set[str]:
    return {path.name for path in directory.iterdir()} if directory.is_dir() else set()


def _epoch(timestamp: str) -> float:
    return time.mktime(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def _mount_points() -> list[tuple[str, str]]:
    """(mount point, root within its filesystem) of every mount this process sees."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        found.append((_unescape(fields[4]), _unescape(fields[3])))
    return found


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape")


def _mounts_under(directory: Path) -> list[str]:
    prefix = str(directory).rstrip("/") + "/"
    return [point for point, _ in _mount_points() if point.startswith(prefix)]
