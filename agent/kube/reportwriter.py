"""Writing this node's NodeReport: create it once (owned by the Node), then patch its status.

**Merge patch of ``/status``, not server-side apply.** The agent is the only writer of its
report's status, so SSA's field ownership buys nothing, and it costs: the server would keep
``managedFields`` for every field of every pod entry (about doubling the object each
descheduler watch receives) and run a structured merge per write. Measured against the fake
API server (``scripts/benchmarks/report.py``, BENCHMARKS.md), an apply body is larger by its
``apiVersion``/``kind``/``metadata`` header and no faster to send. A merge patch replaces
``status.pods`` whole (JSON merge patch replaces lists), which is what we want: pods gone
from the node disappear from the report.

**Owner: the Node, with its UID.** The report is garbage-collected with the Node and not
with the agent's pod, so a rollout of the agent does not make reports flap (the mistake of
node-feature-discovery's NodeFeature, NFD #1752). ``blockOwnerDeletion: false``: a Node's
deletion never waits for its report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent.kube.client import AsyncKube
from agent.kube.errors import Conflict, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import NODE_REPORTS, NODES

FIELD_MANAGER = "kubelet-companion-agent"


def report_object(node_name: str, node_uid: str) -> JsonObject:
    """A new, empty NodeReport owned by its Node."""
    return {
        "apiVersion": NODE_REPORTS.api_version,
        "kind": NODE_REPORTS.kind,
        "metadata": {
            "name": node_name,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node_name,
                    "uid": node_uid,
                    "controller": False,
                    "blockOwnerDeletion": False,
                }
            ],
        },
    }


def status_patch(status: JsonObject) -> bytes:
    """The merge patch body, serialized once (its size is what goes on the wire)."""
    return json.dumps({"status": status}, separators=(",", ":")).encode()


class NodeReportWriter:
    """Creates the report when it is missing, then sends status merge patches.

    Used from one task at a time (the report controller's writer); not thread-safe.
    """

    def __init__(
        self,
        kube: AsyncKube,
        node_name: str,
        *,
        node_object: Callable[[], JsonObject | None] = lambda: None,
    ) -> None:
        self.kube = kube
        self.node_name = node_name
        self.node_object = node_object
        """The cached Node (NodeState), to take its UID without a request."""
        self._exists = False

    async def _node_uid(self) -> str:
        cached = self.node_object()
        uid = ((cached or {}).get("metadata") or {}).get("uid")
        if not uid:
            uid = ((await self.kube.get(NODES, self.node_name)).get("metadata") or {}).get("uid")
        if not uid:
            raise NotFound(f"node {self.node_name} has no uid", status=404)
        return str(uid)

    async def ensure(self) -> None:
        """Create the report unless it exists (a concurrent create is fine)."""
        if self._exists:
            return
        try:
            await self.kube.get(NODE_REPORTS, self.node_name)
        except NotFound:
            obj = report_object(self.node_name, await self._node_uid())
            try:
                await self.kube.create(NODE_REPORTS, obj)
            except Conflict as error:
                if not error.already_exists:
                    raise
        self._exists = True

    async def write(self, status: JsonObject) -> int:
        """Send ``status``; return the bytes sent. ``KubeError`` when it failed."""
        body = {"status": status}
        await self.ensure()
        try:
            await self._patch(body)
        except NotFound:  # deleted under us (or with a recreated Node): create it again
            self._exists = False
            await self.ensure()
            await self._patch(body)
        return len(status_patch(status))

    async def _patch(self, body: JsonObject) -> Any:
        return await self.kube.patch(
            NODE_REPORTS, self.node_name, body, patch_type="merge", subresource="status"
        )
