"""The gate's inputs: NodeState (our Node, pods on this node) plus our own two watches.

We add one DaemonSet reflector per configured namespace (label-selected on the critical
label, so the API server only sends critical DaemonSets) and one CSINode reflector
(field-selected on our node's name). The controller evaluates only once *every* source has
synced: an empty, unsynced DaemonSet store would otherwise read as "nothing critical" and
open the gate at once.

Everything here is touched from the event loop only (reflectors deliver there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agent.kube.api import KubeApi
from agent.kube.jsontypes import JsonObject
from agent.kube.nodestate import NodeState
from agent.kube.reflector import Listener, Reflector
from agent.kube.resources import CSI_NODES, DAEMON_SETS


@dataclass(frozen=True)
class Snapshot:
    node: JsonObject | None
    pods: list[JsonObject]
    daemon_sets: list[JsonObject]
    csinode: JsonObject | None


class Inputs(Protocol):
    """What the controller reads; the real one is ``WatchedInputs``."""

    async def wait_synced(self) -> None: ...

    def snapshot(self) -> Snapshot: ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Every event of every source."""

    def subscribe_node(self, listener: Listener) -> Callable[[], None]:
        """Events of our Node only."""


class WatchedInputs:
    def __init__(
        self,
        node_state: NodeState,
        api: KubeApi,
        *,
        node_name: str,
        namespaces: Sequence[str],
        label_selector: str,
        watch_timeout: float = 300.0,
        read_timeout: float = 90.0,
    ) -> None:
        self.node_state = node_state
        self.node_name = node_name
        self.daemon_sets = [
            Reflector(
                api,
                DAEMON_SETS,
                name=f"readiness-daemonsets-{namespace}",
                namespace=namespace,
                label_selector=label_selector,
                watch_timeout=watch_timeout,
                read_timeout=read_timeout,
            )
            for namespace in namespaces
        ]
        self.csinode = Reflector(
            api,
            CSI_NODES,
            name="readiness-csinode",
            field_selector=f"metadata.name={node_name}",
            watch_timeout=watch_timeout,
            read_timeout=read_timeout,
        )

    @property
    def reflectors(self) -> list[Reflector]:
        """Our own reflectors (NodeState's are run by the entrypoint)."""
        return [*self.daemon_sets, self.csinode]

    async def wait_synced(self) -> None:
        await self.node_state.wait_synced()
        for reflector in self.reflectors:
            await reflector.synced.wait()

    def snapshot(self) -> Snapshot:
        return Snapshot(
            node=self.node_state.node_object(),
            pods=self.node_state.pod_list(),
            daemon_sets=[ds for reflector in self.daemon_sets for ds in reflector.items()],
            csinode=self.csinode.get(self.node_name),
        )

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        unsubscribers = [self.node_state.subscribe(listener)]
        unsubscribers += [reflector.subscribe(listener) for reflector in self.reflectors]

        def unsubscribe_all() -> None:
            for unsubscribe in unsubscribers:
                unsubscribe()

        return unsubscribe_all

    def subscribe_node(self, listener: Listener) -> Callable[[], None]:
        return self.node_state.node.subscribe(listener)
