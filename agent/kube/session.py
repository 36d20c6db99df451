"""One-shot access for CLI commands (``shutdown plan``, ``swap report``, ``readiness``).

Long-running code reads NodeState; a one-shot command has no cache, so it lists once,
from the watch cache (``resourceVersion=0``), which is cheap for the API server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agent.config import AgentConfig
from agent.kube.api import KubeApi
from agent.kube.connection import AGENT, connect
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import NODES, PODS


def open_api(config: AgentConfig) -> KubeApi | None:
    """A ``KubeApi`` for the configured cluster, or ``None`` in node-only mode."""
    connection = connect(config.kubeconfig, component=AGENT)
    if connection is None:
        return None
    return KubeApi(connection.api_client, request_timeout=config.kube.request_timeout)


@contextmanager
def api_session(config: AgentConfig) -> Iterator[KubeApi | None]:
    """``open_api`` for the length of a ``with`` block; the client is closed afterwards.

    Raises ``KubeConfigError`` on entry when the configured kubeconfig cannot be loaded.
    """
    api = open_api(config)
    try:
        yield api
    finally:
        if api is not None:
            api.close()


def list_node_pods(api: KubeApi, node_name: str) -> list[JsonObject]:
    listing = api.list(PODS, field_selector=f"spec.nodeName={node_name}", resource_version="0")
    return list(listing.get("items") or [])


def get_node(api: KubeApi, node_name: str) -> JsonObject:
    return api.get(NODES, node_name)
