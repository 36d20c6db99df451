"""ClusterState: one list+watch cache per kind, compact projections, snapshots for a cycle.

Upstream keeps whole objects in shared informers and, in older versions, listed pods once
per node per cycle (30,000 calls per cycle at 3,000 nodes, #671). Here each kind is listed
once, at ``resourceVersion=0`` (served from the API server's watch cache), then watched;
a 410 relists. Every object is decoded straight into the fields its projection reads
(``wire``), projected on the watch thread, its equal sub-values shared (``sharing``), and
only the projection is kept. Pods are indexed by ``spec.nodeName``. A pod list page, the
bulk of a cold start, takes ``podlist``'s path: the same projection, each part that repeats
across pods computed once.

Deployments, ReplicaSets, StatefulSets and ReplicationControllers are cached too
(``workloads``: their replicas and rollout settings, for implicit budgets), unless implicit
budgets are off; then they are neither listed nor watched.

A cycle never reads the caches directly: ``snapshot(now)`` copies the references into an
immutable ``ClusterSnapshot`` (O(objects), no object copies), so the caches move on while
the cycle plans.

Concurrency: the caches are written on the event loop only (see ``agent.kube.reflector``);
``snapshot`` must be called on the loop too.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist import PodListProjector
from agent.descheduler.cache.sharing import Sharing
from agent.descheduler.cache.wire import codec_for
from agent.descheduler.cache.workloads import project_workload
from agent.descheduler.model.cluster import (
    WORKLOAD_KINDS,
    ClaimInfo,
    ClusterSnapshot,
    DisruptionBudget,
    NodeInfo,
    NodeUsage,
    PodInfo,
    WorkloadInfo,
)
from agent.kube.api import KubeApi
from agent.kube.jsontypes import Decode, JsonObject
from agent.kube.reflector import ProjectingReflector
from agent.kube.resources import (
    DEPLOYMENTS,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    PODS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    STATEFUL_SETS,
    Resource,
)

T = TypeVar("T")
Decoding = Literal["msgspec", "json"]
UsageSource = Callable[[Mapping[str, NodeInfo]], Mapping[str, NodeUsage]]
"""The nodes of the snapshot in, the usage believed for them out (``usage.judge``)."""


@dataclass(frozen=True)
class Projections:
    """API JSON -> model, one function per kind (``agent.descheduler.cache.projection``)."""

    pod: Callable[[JsonObject], PodInfo]
    node: Callable[[JsonObject], NodeInfo]
    disruption_budget: Callable[[JsonObject], DisruptionBudget]
    claim: Callable[[JsonObject], ClaimInfo]
    pod_status: bool = True
    """Whether ``pod`` keeps the pod-state details (``podstatus``); a list page is projected
    the same way (``PodListProjector(with_status=...)``)."""
    workload: Callable[[JsonObject, str], WorkloadInfo] = project_workload
    """A Deployment, ReplicaSet or StatefulSet (the kind given)."""


PROJECTIONS = Projections(
    pod=projection.project_pod,
    node=projection.project_node,
    disruption_budget=projection.project_disruption_budget,
    claim=projection.project_claim,
)
"""Every field any plugin reads."""


def projections(*, with_status: bool) -> Projections:
    """``PROJECTIONS``, without the pod-state details when no enabled plugin reads them
    (``DeschedulerPolicy.reads_pod_status``). The policy is read once, at start, so the
    caches' projection is fixed for the process."""
    if with_status:
        return PROJECTIONS
    return Projections(
        pod=functools.partial(projection.project_pod, with_status=False),
        node=PROJECTIONS.node,
        disruption_budget=PROJECTIONS.disruption_budget,
        claim=PROJECTIONS.claim,
        pod_status=False,
    )


def _no_usage(_nodes: Mapping[str, NodeInfo]) -> Mapping[str, NodeUsage]:
    return {}


def _name(obj: JsonObject) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _pod_node(pod: PodInfo) -> str:
    return pod.node_name


WORKLOAD_RESOURCES = (DEPLOYMENTS, REPLICA_SETS, STATEFUL_SETS, REPLICATION_CONTROLLERS)
"""The caches of ``WORKLOAD_KINDS``, in that order."""


class ClusterState:
    """The descheduler's view of the cluster: six caches (ten with the workloads), and
    snapshots of them."""

    def __init__(
        self,
        api: KubeApi,
        projections: Projections,
        *,
        usage: UsageSource = _no_usage,
        decoding: Decoding = "msgspec",
        read_timeout: float = 90.0,
        watch_timeout: float = 300.0,
        workloads: bool = True,
    ) -> None:
        self.usage = usage
        pod_sharing, node_sharing, label_sharing = Sharing(), Sharing(), Sharing()
        workload_sharing = Sharing()

        # List pages are projected as they are decoded (``entries``), memoized and already
        # shared; watch events take the dict path.
        pod_list = PodListProjector(with_status=projections.pod_status)

        def project_pod(obj: JsonObject) -> PodInfo:
            return pod_sharing.pod(projections.pod(obj))

        def project_node(obj: JsonObject) -> NodeInfo:
            return node_sharing.node(projections.node(obj))

        def namespace_labels(obj: JsonObject) -> Mapping[str, str]:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            return label_sharing.labels({str(k): str(v) for k, v in labels.items()})

        def cache(
            resource: Resource,
            kind: str,
            project: Callable[[Any], T],
            index: Callable[[T], str] | None = None,
        ) -> ProjectingReflector[T]:
            if decoding == "json":
                decode_page: Decode = json.loads
                decode_event: Decode = json.loads
            else:
                codec = codec_for(kind)
                decode_page, decode_event = codec.decode_page, codec.decode_event
                if kind == "Pod":
                    decode_page = pod_list.decode_page
            return ProjectingReflector(
                api,
                resource,
                name=f"descheduler-{resource.plural}",
                project=project,
                index=index,
                decode_page=decode_page,
                decode_event=decode_event,
                read_timeout=read_timeout,
                watch_timeout=watch_timeout,
            )

        self.pods = cache(PODS, "Pod", project_pod, _pod_node)
        self.nodes = cache(NODES, "Node", project_node)
        self.namespaces = cache(NAMESPACES, "Namespace", namespace_labels)
        self.disruption_budgets = cache(
            POD_DISRUPTION_BUDGETS, "PodDisruptionBudget", projections.disruption_budget
        )
        self.claims = cache(PERSISTENT_VOLUME_CLAIMS, "PersistentVolumeClaim", projections.claim)
        self.priority_classes = cache(
            PRIORITY_CLASSES, "PriorityClass", projection.priority_class_value
        )

        def workload_of(kind: str) -> Callable[[JsonObject], WorkloadInfo]:
            def project(obj: JsonObject) -> WorkloadInfo:
                return workload_sharing.workload(projections.workload(obj, kind))

            return project

        self.workloads: tuple[ProjectingReflector[WorkloadInfo], ...] = (
            tuple(
                cache(resource, resource.kind, workload_of(resource.kind))
                for resource in WORKLOAD_RESOURCES
            )
            if workloads
            else ()
        )
        """The caches of ``WORKLOAD_KINDS``; none when implicit budgets are off."""

    @property
    def reflectors(self) -> tuple[ProjectingReflector[Any], ...]:
        return (
            self.pods,
            self.nodes,
            self.namespaces,
            self.disruption_budgets,
            self.claims,
            self.priority_classes,
            *self.workloads,
        )

    @property
    def synced(self) -> bool:
        """Every cache has completed its first list."""
        return all(reflector.synced.is_set() for reflector in self.reflectors)

    async def wait_synced(self) -> None:
        await asyncio.gather(*(reflector.synced.wait() for reflector in self.reflectors))

    def snapshot(self, now: float) -> ClusterSnapshot:
        """An immutable view for one cycle, taken on the loop (references, not copies)."""
        budgets: dict[str, list[DisruptionBudget]] = {}
        for budget in self.disruption_budgets.store.values():
            budgets.setdefault(budget.namespace, []).append(budget)
        nodes = dict(self.nodes.store)
        return ClusterSnapshot(
            nodes=nodes,
            # Unbound pods stay under "" (``ClusterSnapshot.pending_pods``): the critical
            # add-on rescue looks for Pending ones; plugins that walk nodes never see them.
            pods_by_node={
                node: tuple(bucket.values()) for node, bucket in self.pods.indexed.items()
            },
            namespaces=dict(self.namespaces.store),
            disruption_budgets={ns: tuple(items) for ns, items in budgets.items()},
            claims=dict(self.claims.store),
            priority_classes=dict(self.priority_classes.store),
            node_usage=dict(self.usage(nodes)),
            now=now,
            workloads={
                workload.uid: workload
                for reflector in self.workloads
                for workload in reflector.store.values()
            },
            workload_kinds=frozenset(WORKLOAD_KINDS) if self.workloads else frozenset(),
        )
