"""One-shot reads of the gate's inputs, for the ``readiness`` command.

The agent reads its watches; a one-shot command has none, so it lists once, from the API
server's watch cache (``resourceVersion=0``), the same objects the agent's watches select.
"""

from __future__ import annotations

from agent.kube.api import KubeApi
from agent.kube.errors import NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import CSI_NODES, DAEMON_SETS
from agent.kube.session import get_node, list_node_pods
from agent.readiness.inputs import Snapshot
from agent.readiness.settings import GateSettings


def read_snapshot(api: KubeApi, node_name: str, settings: GateSettings) -> Snapshot:
    """Our Node, its pods, the critical DaemonSets and our CSINode (``None`` if absent).

    Raises ``NotFound`` when the Node does not exist, other ``KubeError`` as they come.
    """
    node = get_node(api, node_name)
    pods = list_node_pods(api, node_name)
    daemon_sets: list[JsonObject] = []
    for namespace in settings.namespaces:
        listing = api.list(
            DAEMON_SETS,
            namespace=namespace,
            label_selector=settings.keys.label_selector,
            resource_version="0",
        )
        daemon_sets.extend(listing.get("items") or [])
    try:
        csinode = api.get(CSI_NODES, node_name)
    except NotFound:
        csinode = None
    return Snapshot(node=node, pods=pods, daemon_sets=daemon_sets, csinode=csinode)
