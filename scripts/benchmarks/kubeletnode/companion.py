"""The agent beside the real kubelet: its cluster objects, its credentials, its process.

Credentials, as [Install](../../../docs/install.md) describes them for a systemd node: the
base's Namespace, NodeReport CRD and the agent's ServiceAccount with its RBAC are applied,
and a token for that ServiceAccount bound to the Node is asked for. Kubernetes before 1.31
refuses a Node as a token's bound object (only Pods and Secrets); then the token is bound
to nothing, which the agent and ``doctor`` warn about, and ``credentials`` says which one
the run used. The base's admission policy (``ValidatingAdmissionPolicy``, v1 from
Kubernetes 1.30) is not applied on an older API server; RBAC alone then limits the agent.

The agent is the package's own ``kubelet-companion agent`` entry point, a process of its
own, with the system bus pointed at the logind harness, JSON logs on its stderr (to a file
the benchmark reads), and a state directory and metrics port of its own. It is stopped with
SIGTERM (a graceful stop: the NodeReport gets ``agentStopped``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import urllib3
import yaml

from scripts.benchmarks.livecluster.api import Api, ApiError

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "daemonset" / "base"
BASE_FILES = ("namespace.yaml", "nodereport-crd.yaml", "agent-rbac.yaml")
NAMESPACE, ACCOUNT = "kubelet-companion", "kubelet-companion-agent"
COMMAND = ROOT / ".venv" / "bin" / "kubelet-companion"
TOKEN_SECONDS = 6 * 3600
_COLLECTIONS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{namespace}/serviceaccounts",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "Pod": "/api/v1/namespaces/{namespace}/pods",
    "Deployment": "/apis/apps/v1/namespaces/{namespace}/deployments",
    "DaemonSet": "/apis/apps/v1/namespaces/{namespace}/daemonsets",
}


def collection(manifest: dict[str, Any]) -> str:
    """Where ``manifest`` is created (the kinds this benchmark makes)."""
    namespace = (manifest.get("metadata") or {}).get("namespace", "default")
    return _COLLECTIONS[manifest["kind"]].format(namespace=namespace)


def create(api: Api, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create ``manifest``; one that exists already is left as it is."""
    status, answer = api.request("POST", collection(manifest), manifest)
    if status == 409:
        return manifest
    if status >= 300:
        raise ApiError("POST", collection(manifest), status, answer)
    return dict(answer)


def apply_base(api: Api) -> None:
    """What a systemd node's agent needs of ``daemonset/base``; waits for the CRD."""
    for name in BASE_FILES:
        for manifest in yaml.safe_load_all((BASE / name).read_text(encoding="utf-8")):
            if manifest:
                create(api, manifest)
    path = "/apis/kubelet-companion.io/v1alpha1/nodereports"
    deadline = time.monotonic() + 60
    while api.request("GET", path)[0] != 200:
        if time.monotonic() > deadline:
            raise RuntimeError("the NodeReport CRD is not served after 60 s")
        time.sleep(0.2)


@dataclass(frozen=True)
class Credentials:
    token: str
    how: str
    """Which token the agent runs with, and why (for the results)."""


def agent_token(api: Api, node: str) -> Credentials:
    """A token of the agent's ServiceAccount bound to ``node``'s Node object if the API
    server accepts that, else one bound to nothing (saying why)."""
    path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token"
    uid = api.ok("GET", f"/api/v1/nodes/{node}")["metadata"]["uid"]
    bound = {
        "kind": "Node",
        "apiVersion": "v1",
        "name": node,
        "uid": uid,
    }
    request: dict[str, Any] = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS, "boundObjectRef": bound},
    }
    status, answer = api.request("POST", path, request)
    if status < 300:
        return Credentials(
            answer["status"]["token"], "agent ServiceAccount token bound to the Node"
        )
    refusal = str((answer or {}).get("message") if isinstance(answer, dict) else answer)
    del request["spec"]["boundObjectRef"]
    token = api.ok("POST", path, request)["status"]["token"]
    return Credentials(
        token,
        "agent ServiceAccount token bound to no object: the API server refused a Node-bound "
        f"one ({status}: {refusal[:160]}); RBAC from daemonset/base, no admission policy",
    )


def config_text(
    *,
    node: str,
    state_dir: Path,
    metrics_port: int,
    dropin: Path,
    buckets: tuple[tuple[int, int], ...],
) -> str:
    """The agent's config for this node (every section at its default but these)."""
    lines = [
        f"nodeName: {node}",
        f"stateDir: {state_dir}",
        f"metricsBindAddress: 127.0.0.1:{metrics_port}",
        "logFormat: json",
        "logLevel: info",
        "shutdownGracePeriodByPodPriority:",
        *(f"  - {{priority: {p}, shutdownGracePeriodSeconds: {s}}}" for p, s in buckets),
        "shutdown:",
        f"  logindDropInPath: {dropin}",
        "readiness:",
        "  mode: bootstrap-only",
        "report:",
        "  sampleInterval: 5s",
    ]
    return "\n".join(lines) + "\n"


class CompanionProcess:
    """``kubelet-companion agent`` as a child process; its log is JSON lines."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config = config
        self.log_path = log
        self.env: dict[str, str] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self, env: dict[str, str]) -> None:
        self.env = env
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [str(COMMAND), "agent", "--config", str(self.config)],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 20) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; the exit status."""
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if self._log is not None:
                self._log.close()
            return process.returncode
        return None

    def run_command(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A one-shot subcommand (``doctor --json``...) with the agent's config and env."""
        return subprocess.run(
            [str(COMMAND), *args, "--config", str(self.config)],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def metric(port: int, name: str) -> float | None:
    """One unlabelled sample from the agent's ``/metrics``, or ``None``."""
    http = urllib3.PoolManager(retries=False)
    try:
        text = http.request("GET", f"http://127.0.0.1:{port}/metrics", timeout=2).data.decode()
    except urllib3.exceptions.HTTPError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def agent_env(kubeconfig: Path, bus_address: str, node: str, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "NODE_NAME": node,
        "DBUS_SYSTEM_BUS_ADDRESS": bus_address,
        "KUBERNETES_SERVICE_HOST": "",
        "HOME": str(home),
    }
