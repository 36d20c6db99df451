"""Finding a cluster: an explicit kubeconfig, else in-cluster, else ``~/.kube/config``.

With none of them the agent runs in node-only mode: ``connect`` returns ``None`` and the
caller logs that once. Client-level retries are turned off because the adapter retries
itself, with backoff it can see and bound.

Each component sends its own User-Agent (``kubelet-companion-agent/<version>``,
``kubelet-companion-descheduler/<version>``), as kubectl and client-go binaries do: the API
server's audit log and its per-user-agent metrics then tell the two apart, and so can the
tests that prove each component's RBAC from the requests it sent.

A kubeconfig with ``insecure-skip-tls-verify`` makes urllib3 warn on every request
(``InsecureRequestWarning``, with a stack line each time). The operator chose it; one log
line says TLS verification is off, and the per-request warning is filtered out.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from agent import __version__
from agent.kube.errors import KubeConfigError
from agent.kubesemantics.wellknown import SERVICE_ACCOUNT_DIR

_log = structlog.get_logger(subsystem="kube.connection")
_told_unverified: set[str] = set()
"""Sources already logged as unverified: the line is said once per process and source."""


IN_CLUSTER = "in-cluster"
"""``ClusterConnection.source`` when the process runs in a pod with its service account."""
SERVICE_ACCOUNT_TOKEN = Path(SERVICE_ACCOUNT_DIR) / "token"

Component = Literal["agent", "descheduler"]
AGENT: Component = "agent"
DESCHEDULER: Component = "descheduler"


def user_agent(component: Component) -> str:
    """The User-Agent header of ``component``'s requests."""
    return f"kubelet-companion-{component}/{__version__}"


@dataclass(frozen=True)
class ClusterConnection:
    api_client: k8s_client.ApiClient
    source: str


def _configuration() -> k8s_client.Configuration:
    configuration = k8s_client.Configuration()
    configuration.retries = urllib3.Retry(total=0, connect=0, read=0, redirect=0, status=0)
    configuration.connection_pool_maxsize = 32
    return configuration


def _from_kubeconfig(path: str, component: Component | None) -> ClusterConnection:
    configuration = _configuration()
    try:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, client_configuration=configuration
        )
    except (ConfigException, OSError, ValueError, TypeError) as error:
        # The client raises a mix of these for missing files, bad YAML and bad fields.
        raise KubeConfigError(f"kubeconfig {path}: {error}") from None
    return _checked(ClusterConnection(_client(configuration, component), f"kubeconfig {path}"))


def _pin_proxy(configuration: k8s_client.Configuration) -> None:
    """Fix the proxy the environment named when the cluster was loaded.

    The client resolves a proxy from the environment whenever ``host`` is assigned, and its
    token-refresh hook assigns ``host`` (unchanged) before every request: that scan of
    ``os.environ`` was the largest single cost in an eviction's client CPU. The connection
    pool is built once, with the proxy of this moment, so pinning it here changes no
    request."""
    configuration.proxy = configuration.proxy


def _client(
    configuration: k8s_client.Configuration, component: Component | None
) -> k8s_client.ApiClient:
    _pin_proxy(configuration)
    api_client = k8s_client.ApiClient(configuration)
    if component is not None:
        api_client.user_agent = user_agent(component)
    return api_client


def _checked(connection: ClusterConnection) -> ClusterConnection:
    """Say once that TLS is unverified, and keep urllib3 from warning at every request."""
    if connection.api_client.configuration.verify_ssl:
        return connection
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    if connection.source not in _told_unverified:
        _told_unverified.add(connection.source)
        _log.warning(
            "TLS verification is off (insecure-skip-tls-verify): the API server's identity "
            "is not checked",
            source=connection.source,
        )
    return connection


def connect(
    kubeconfig: str = "", *, component: Component | None = None
) -> ClusterConnection | None:
    """Return a connection, or ``None`` for node-only mode.

    ``component`` names the caller in the User-Agent header; without it the client's own
    header is sent. An explicitly configured kubeconfig that cannot be loaded is an error
    (``KubeConfigError``), not a silent fallback: the operator asked for that cluster.
    """
    if kubeconfig:
        return _from_kubeconfig(kubeconfig, component)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = _configuration()
        try:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        except ConfigException:
            pass
        else:
            return _checked(ClusterConnection(_client(configuration, component), IN_CLUSTER))
    default = Path.home() / ".kube" / "config"
    if default.is_file():
        return _from_kubeconfig(str(default), component)
    return None


__all__ = [
    "AGENT",
    "DESCHEDULER",
    "IN_CLUSTER",
    "SERVICE_ACCOUNT_TOKEN",
    "ClusterConnection",
    "Component",
    "KubeConfigError",
    "connect",
    "user_agent",
]
