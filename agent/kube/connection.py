"""Finding a cluster: an explicit kubeconfig, else in-cluster, else ``~/.kube/config``.

With none of them the agent runs in node-only mode: ``connect`` returns ``None`` and the
caller logs that once. Client-level retries are turned off because the adapter retries
itself, with backoff it can see and bound.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from agent.kube.errors import KubeConfigError


@dataclass(frozen=True)
class ClusterConnection:
    api_client: k8s_client.ApiClient
    source: str


def _configuration() -> k8s_client.Configuration:
    configuration = k8s_client.Configuration()
    configuration.retries = urllib3.Retry(total=0, connect=0, read=0, redirect=0, status=0)
    configuration.connection_pool_maxsize = 32
    return configuration


def _from_kubeconfig(path: str) -> ClusterConnection:
    configuration = _configuration()
    try:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, client_configuration=configuration
        )
    except (ConfigException, OSError, ValueError, TypeError) as error:
        # The client raises a mix of these for missing files, bad YAML and bad fields.
        raise KubeConfigError(f"kubeconfig {path}: {error}") from None
    return ClusterConnection(k8s_client.ApiClient(configuration), f"kubeconfig {path}")


def connect(kubeconfig: str = "") -> ClusterConnection | None:
    """Return a connection, or ``None`` for node-only mode.

    An explicitly configured kubeconfig that cannot be loaded is an error
    (``KubeConfigError``), not a silent fallback: the operator asked for that cluster.
    """
    if kubeconfig:
        return _from_kubeconfig(kubeconfig)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = _configuration()
        try:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        except ConfigException:
            pass
        else:
            return ClusterConnection(k8s_client.ApiClient(configuration), "in-cluster")
    default = Path.home() / ".kube" / "config"
    if default.is_file():
        return _from_kubeconfig(str(default))
    return None


__all__ = ["ClusterConnection", "KubeConfigError", "connect"]
