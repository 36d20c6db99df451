"""NodeState: the one in-memory view of this node's Node object and its pods.

Controllers read snapshots from here and wait on changes; they never list pods themselves.
The one exception is ``relist_pods``, for a shutdown that starts while the pod watch is
down: then the cache may lack pods created meanwhile, and a pod the shutdown never sees is
never terminated. All access is from the event loop thread (the reflectors deliver there).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agent.clock import SystemClock, sleep_or_set
from agent.kube.api import KubeApi
from agent.kube.jsontypes import JsonObject
from agent.kube.reflector import Listener, Reflector
from agent.kube.resources import NODES, PODS


class NodeState:
    def __init__(
        self,
        api: KubeApi,
        node_name: str,
        *,
        watch_timeout: float = 300.0,
        read_timeout: float = 90.0,
    ) -> None:
        self.node_name = node_name
        self.pods = Reflector(
            api,
            PODS,
            name="pods",
            field_selector=f"spec.nodeName={node_name}",
            watch_timeout=watch_timeout,
            read_timeout=read_timeout,
        )
        self.node = Reflector(
            api,
            NODES,
            name="node",
            field_selector=f"metadata.name={node_name}",
            watch_timeout=watch_timeout,
            read_timeout=read_timeout,
        )
        self._changed = asyncio.Event()
        for reflector in (self.pods, self.node):
            reflector.subscribe(self._on_change)

    @property
    def reflectors(self) -> tuple[Reflector, Reflector]:
        return (self.pods, self.node)

    @property
    def version(self) -> int:
        return self.pods.version + self.node.version

    @property
    def synced(self) -> bool:
        return self.pods.synced.is_set() and self.node.synced.is_set()

    @property
    def pods_synced(self) -> bool:
        return self.pods.synced.is_set()

    @property
    def pods_live(self) -> bool:
        """The pod cache is synced and its watch open (see ``Reflector.live``)."""
        return self.pods.live

    async def relist_pods(self, timeout: float) -> None:
        """List this node's pods from the API server itself (a consistent read, not its
        watch cache) and make the list the pod cache's contents; raises ``KubeError``.

        The blocking call runs on a thread of its own, bounded by ``timeout`` per request,
        so it never waits behind the requests it is meant to help (the shutdown's pool).
        """
        listing = await asyncio.to_thread(
            self.pods.api.list,
            PODS,
            field_selector=self.pods.field_selector,
            timeout=timeout,
        )
        self.pods.adopt(listing)

    async def wait_synced(self) -> None:
        await self.pods.synced.wait()
        await self.node.synced.wait()

    def pod_list(self) -> list[JsonObject]:
        return self.pods.items()

    def node_object(self) -> JsonObject | None:
        return self.node.get(self.node_name)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Listen to pod and node events (called on the loop, must not block)."""
        unsubscribers = [reflector.subscribe(listener) for reflector in self.reflectors]

        def unsubscribe_all() -> None:
            for unsubscribe in unsubscribers:
                unsubscribe()

        return unsubscribe_all

    async def wait_changed(self, since: int, timeout: float | None = None) -> int:
        """Wait until ``version`` differs from ``since`` (or the timeout); return it."""
        while self.version == since:
            self._changed.clear()
            if not await sleep_or_set(SystemClock(), timeout, self._changed):
                break
        return self.version

    def _on_change(self, kind: str, obj: JsonObject | None) -> None:  # noqa: ARG002 - Listener signature
        self._changed.set()
