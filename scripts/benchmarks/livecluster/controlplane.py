"""etcd, kube-apiserver, kube-scheduler and kube-controller-manager on loopback, in a temp dir.

What a kubelet-less cluster needs to move pods the way a real one does: the API server
admits evictions against PodDisruptionBudgets, the ReplicaSet and Deployment controllers
make replacements, the disruption controller keeps budgets' status current, the scheduler
(default profile, or one scoring MostAllocated for compaction) places them. The node
lifecycle controller stays off: the nodes are fake (``nodes.py`` keeps them Ready), and so
does the service-account token controller (no legacy token Secrets needed).

Every component listens on loopback only, on ports free when it starts. The API server takes
one static token (generated here, written to a 0600 file, in the kubeconfig) mapped to
``system:masters``, authorizes with RBAC, and serves a certificate it generates itself in
``--cert-dir``; the kubeconfig trusts exactly that certificate. The service-account signing
key comes from ``openssl genrsa`` (argument lists, nothing through a shell). ``reset`` wipes
etcd's data and starts again with the same certificates and token, so every run of a
scenario starts from an empty cluster.

A real kubelet can join as well (``nodes``, for ``scripts/benchmarks/realnode.py``): each
such node gets a token of its own (user ``system:node:NAME``, group ``system:nodes``), the
API server then authorizes with ``Node,RBAC`` and admits with ``NodeRestriction`` as a real
cluster does, and reaches the kubelets at their ``InternalIP`` (for ``/stats/summary``
through its proxy).
"""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import urllib3

from scripts.benchmarks.livecluster.api import Api
from scripts.benchmarks.livecluster.binaries import Binaries
from tests.harness.childprocess import stop_process

LOOPBACK = "127.0.0.1"
CONTROLLERS = "deployment,replicaset,disruption,serviceaccount,garbagecollector"
"""What moves pods: the Deployment and ReplicaSet controllers make replacements, the
disruption controller keeps budgets' status current, the service-account controller makes
the ``default`` ServiceAccount pods need to be admitted."""
SCORING = ("LeastAllocated", "MostAllocated")


STOP_SECONDS = 15.0
"""How long a process a benchmark started has to exit on SIGTERM before SIGKILL."""


def free_port() -> int:
    """A loopback port nobody listens on now (the component binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


@dataclass
class Ports:
    etcd_client: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)
    scheduler: int = field(default_factory=free_port)
    controller_manager: int = field(default_factory=free_port)


class ControlPlaneError(RuntimeError):
    pass


def scheduler_config(kubeconfig: Path, scoring: str) -> dict[str, Any]:
    """The scheduler's configuration: the default profile, with ``NodeResourcesFit`` scoring
    ``scoring``; for ``MostAllocated`` (bin packing, what HighNodeUtilization expects of the
    scheduler) the balanced-allocation score is off too, as it would pull the other way."""
    if scoring not in SCORING:
        raise ValueError(f"scoring must be one of {SCORING}, not {scoring!r}")
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if scoring == "MostAllocated":
        profile["pluginConfig"] = [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                        ],
                    }
                },
            }
        ]
        profile["plugins"] = {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }


class ControlPlane:
    """The four components as child processes; ``start``, ``stop``, ``reset``.

    ``directory`` holds everything: etcd's data, the certificates, the token file, the
    kubeconfig and one log per component. ``nodes`` names the real kubelets that will join
    (none: every node is a stand-in), ``controllers`` the controller manager's list."""

    def __init__(
        self,
        binaries: Binaries,
        directory: Path,
        *,
        nodes: tuple[str, ...] = (),
        controllers: str = CONTROLLERS,
    ) -> None:
        self.binaries = binaries
        self.directory = directory
        self.ports = Ports()
        self.token = secrets.token_urlsafe(32)
        self.node_tokens = {node: secrets.token_urlsafe(32) for node in nodes}
        self.controllers = controllers
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, IO[bytes]] = {}
        self.scoring = "LeastAllocated"

    # -- paths ------------------------------------------------------------------------------

    @property
    def server(self) -> str:
        return f"https://{LOOPBACK}:{self.ports.apiserver}"

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def token_file(self) -> Path:
        return self.directory / "token"

    @property
    def ca_file(self) -> Path:
        """The API server's self-signed serving certificate (with its CA), from --cert-dir."""
        return self.directory / "certs" / "apiserver.crt"

    def api(self, connections: int = 16) -> Api:
        return Api(self.server, self.token, self.ca_file, connections=connections)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, scoring: str = "LeastAllocated") -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "certs").mkdir(exist_ok=True)
        self._credentials()
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfig()
        self.start_scheduler(scoring)
        self._start_controller_manager()
        self._wait_healthy("kube-controller-manager", self.ports.controller_manager)
        self._wait_default_service_account()

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-scheduler", "kube-apiserver", "etcd"):
            self._stop(name)

    def reset(self, scoring: str = "LeastAllocated") -> None:
        """Stop everything, wipe etcd's data, start again (same certificates and token)."""
        self.stop()
        etcd_data = self.directory / "etcd"
        shutil.rmtree(etcd_data, ignore_errors=True)
        self.start(scoring)

    def start_scheduler(self, scoring: str) -> None:
        """(Re)start the scheduler scoring ``scoring``: a scenario that packs switches it
        between laying out its cluster and running the descheduler."""
        self._stop("kube-scheduler")
        config = self.directory / f"scheduler-{scoring}.json"
        config.write_text(json.dumps(scheduler_config(self.kubeconfig, scoring)), encoding="utf-8")
        self._spawn(
            "kube-scheduler",
            [
                str(self.binaries.scheduler),
                f"--config={config}",
                f"--bind-address={LOOPBACK}",
                f"--secure-port={self.ports.scheduler}",
                "--v=2",
            ],
        )
        self._wait_healthy("kube-scheduler", self.ports.scheduler)
        self.scoring = scoring

    # -- pieces -----------------------------------------------------------------------------

    def _credentials(self) -> None:
        key = self.directory / "sa.key"
        if not key.exists():
            subprocess.run(
                ["openssl", "genrsa", "-out", str(key), "2048"],
                check=True,
                capture_output=True,
            )
        lines = [f'{self.token},admin,admin-uid,"system:masters"']
        lines += [
            f'{token},system:node:{node},node-{node},"system:nodes"'
            for node, token in self.node_tokens.items()
        ]
        self.token_file.write_text("".join(line + "\n" for line in lines))
        self.token_file.chmod(0o600)

    def _start_etcd(self) -> None:
        client = f"http://{LOOPBACK}:{self.ports.etcd_client}"
        peer = f"http://{LOOPBACK}:{self.ports.etcd_peer}"
        self._spawn(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=bench",
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=bench={peer}",
                "--quota-backend-bytes=8589934592",
            ],
        )
        plain = urllib3.PoolManager(retries=False)
        self._wait(
            "etcd",
            lambda: b'"health":"true"' in plain.request("GET", f"{client}/health", timeout=2).data,
        )

    def _start_apiserver(self) -> None:
        key = self.directory / "sa.key"
        if self.node_tokens:  # real kubelets: a real cluster's node authorization
            access = [
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
            ]
        else:
            access = ["--authorization-mode=RBAC"]
        self._spawn(
            "kube-apiserver",
            [
                str(self.binaries.apiserver),
                f"--etcd-servers=http://{LOOPBACK}:{self.ports.etcd_client}",
                f"--bind-address={LOOPBACK}",
                f"--advertise-address={LOOPBACK}",
                f"--secure-port={self.ports.apiserver}",
                f"--cert-dir={self.directory / 'certs'}",
                f"--token-auth-file={self.token_file}",
                *access,
                "--anonymous-auth=false",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={key}",
                f"--service-account-signing-key-file={key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                # The "kubernetes" Service's endpoint would be the advertise address, and a
                # loopback one is refused every 10 s: nothing in the cluster needs it.
                "--endpoint-reconciler-type=none",
                "--max-requests-inflight=2000",
                "--max-mutating-requests-inflight=1000",
                "--profiling=false",
            ],
        )

        def ready() -> bool:
            status, body = self.api(connections=1).request("GET", "/readyz", timeout=3)
            return status == 200 and body == "ok"

        self._wait("kube-apiserver", ready, timeout=120)

    def _write_kubeconfig(self) -> None:
        self.write_kubeconfig(self.kubeconfig, self.token, "admin")

    def write_kubeconfig(self, path: Path, token: str, user: str) -> None:
        """A kubeconfig (mode 0600) for ``token``, trusting the API server's certificate."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "bench",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": user}}],
            "current-context": "bench",
        }
        path.write_text(json.dumps(config, indent=1), encoding="utf-8")
        path.chmod(0o600)

    def _start_controller_manager(self) -> None:
        self._spawn(
            "kube-controller-manager",
            [
                str(self.binaries.controller_manager),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                f"--bind-address={LOOPBACK}",
                f"--secure-port={self.ports.controller_manager}",
                f"--controllers={self.controllers}",
                "--use-service-account-credentials=false",
                "--cluster-name=bench",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--concurrent-replicaset-syncs=10",
                "--concurrent-deployment-syncs=10",
                "--v=2",
            ],
        )

    def _wait_default_service_account(self) -> None:
        api = self.api(connections=1)
        path = "/api/v1/namespaces/default/serviceaccounts/default"
        self._wait("the default ServiceAccount", lambda: api.request("GET", path)[0] == 200)

    # -- processes --------------------------------------------------------------------------

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

    def _wait(self, what: str, check: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise ControlPlaneError(
                        f"{name} exited with {process.returncode} while waiting for {what}; "
                        f"see {self.directory / (name + '.log')}"
                    )
            try:
                if check():
                    return
            except (urllib3.exceptions.HTTPError, OSError):
                pass
            time.sleep(0.5)
        raise ControlPlaneError(f"{what} not ready after {timeout:.0f} s; logs in {self.directory}")

    def _wait_healthy(self, name: str, port: int) -> None:
        # The scheduler and the controller manager serve /healthz with a certificate they
        # make up in memory at start: nothing to verify it against, and it is loopback.
        probe = urllib3.PoolManager(cert_reqs="CERT_NONE", retries=False)
        url = f"https://{LOOPBACK}:{port}/healthz"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            self._wait(name, lambda: probe.request("GET", url, timeout=2).data == b"ok")

    def _stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            stop_process(process, STOP_SECONDS)
        log = self.logs.pop(name, None)
        if log is not None:
            log.close()
