"""A pod from the API as the swap audit needs it: identity, QoS, containers and their IDs.

Pod UIDs and container IDs come from the API and are untrusted: they are only ever used as
dictionary keys to match what the cgroup scan found, never to build a path. A container ID
that is not a plain hex runtime ID is dropped here, so it cannot match anything.

Static pods run under the UID of their manifest; the API shows a mirror pod with a new UID
and the manifest's in the ``kubernetes.io/config.mirror`` annotation, so both are kept.

Memory requests and limits are the ones kubelet sized the container with, which after an
in-place resize are not the spec's: the request comes from the container status's
``allocatedResources`` (kubelet's checkpointed allocation, from which it computes the swap
limit when it creates or restarts the container), else ``resources.requests``; the limit
from ``resources.limits`` (the applied limits). The spec is the fallback where the status
has neither (not started yet, or no InPlacePodVerticalScaling). A resize that changed only
the spec (not yet accepted, or infeasible: since 1.33 kubelet refuses to resize a swapping
container's memory in place unless its memory ``resizePolicy`` is ``RestartContainer``)
therefore does not show as drift.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agent.kubesemantics.podresources import MEMORY, allocated_resources
from agent.kubesemantics.pods import MIRROR_ANNOTATION
from agent.kubesemantics.qos import QOSClass, critical_reason, pod_qos
from agent.kubesemantics.quantities import whole_bytes

_RUNTIME_ID = re.compile(r"^[0-9a-f]{12,128}$")


class ContainerKind(StrEnum):
    INIT = "init"
    REGULAR = "regular"
    EPHEMERAL = "ephemeral"


_SPEC_AND_STATUS = (
    (ContainerKind.INIT, "initContainers", "initContainerStatuses"),
    (ContainerKind.REGULAR, "containers", "containerStatuses"),
    (ContainerKind.EPHEMERAL, "ephemeralContainers", "ephemeralContainerStatuses"),
)


@dataclass(frozen=True)
class ContainerView:
    name: str
    kind: ContainerKind
    memory_request: int
    """Bytes (``Value()``, defaulted to the limit), as allocated; 0 when unset."""
    memory_limit: int
    request_equals_limit: bool
    """Exact comparison of the quantities, as kubelet's ``Cmp`` does."""
    container_id: str | None
    """The runtime's hex ID from the pod status, ``None`` before it starts or if malformed."""


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    uid: str
    cgroup_uids: frozenset[str]
    qos: QOSClass
    critical: str | None
    containers: tuple[ContainerView, ...]


def runtime_id(container_id: Any) -> str | None:
    """``containerd://<hex>`` (or ``cri-o://``, ``docker://``) to ``<hex>``; else ``None``."""
    if not isinstance(container_id, str):
        return None
    _, _, bare = container_id.rpartition("://")
    return bare if _RUNTIME_ID.match(bare) else None


def _statuses(status: Mapping[str, Any], key: str) -> dict[str, Mapping[str, Any]]:
    """Container statuses by container name (entries without a name are ignored)."""
    return {
        entry["name"]: entry
        for entry in status.get(key) or []
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
    }


def cgroup_uids(pod: Mapping[str, Any]) -> frozenset[str]:
    """The pod UIDs its cgroups may carry: its own, and a static pod's manifest UID."""
    metadata = pod.get("metadata") or {}
    uid = str(metadata.get("uid") or "")
    uids = {uid} if uid else set()
    mirror = (metadata.get("annotations") or {}).get(MIRROR_ANNOTATION)
    if isinstance(mirror, str) and mirror:
        uids.add(mirror)
    return frozenset(uids)


def pod_view(pod: Mapping[str, Any]) -> PodView:
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    uid = str(metadata.get("uid") or "")
    containers = []
    for kind, spec_key, status_key in _SPEC_AND_STATUS:
        statuses = _statuses(status, status_key)
        for container in spec.get(spec_key) or []:
            if not isinstance(container, Mapping):
                continue
            name = str(container.get("name") or "")
            own_status = statuses.get(name, {})
            resources = allocated_resources(container.get("resources"), own_status)
            request, limit = resources.request(MEMORY), resources.limit(MEMORY)
            containers.append(
                ContainerView(
                    name=name,
                    kind=kind,
                    memory_request=whole_bytes(request),
                    memory_limit=whole_bytes(limit),
                    request_equals_limit=request == limit,
                    container_id=runtime_id(own_status.get("containerID")),
                )
            )
    return PodView(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=uid,
        cgroup_uids=cgroup_uids(pod),
        qos=pod_qos(pod),
        critical=critical_reason(pod),
        containers=tuple(containers),
    )
