"""API JSON -> the compact model: the only place that knows the objects' wire shape.

Everything a plugin reads is computed here once, when an object enters the cache, so a cycle
never parses a quantity or walks a container list. The rules are upstream's (and the API
server's, and kubelet's where upstream calls theirs):

- effective pod requests follow ``resourcehelper.PodRequests`` (what upstream's
  ``PodRequestsAndLimits`` returns): the sum of the containers, raised to any init container
  that asks for more (restartable "sidecar" init containers add to the sum and to every later
  init container); then pod-level ``spec.resources.requests`` replace that for the resources
  pod-level resources support (cpu, memory, ``hugepages-*``), a pod-level limit standing in
  for a request the pod and its containers leave unset, as the API server defaults it; plus
  ``spec.overhead``; ``pods`` is 1 so summing requests counts pods;
- QoS is ``agent.kubesemantics.qos`` (``status.qosClass`` first);
- a Node is Ready unless it has a ``Ready`` condition that is not True (upstream's
  ``IsReady``: a node with no conditions at all counts as ready);
- a Node's capacity for the plugins is ``status.allocatable``, or ``status.capacity`` when
  allocatable is empty (upstream's ``referencedResourceListForNodeCapacity``).

Input is checked as the API server would have: a quantity that does not parse (ASCII digits
only, at most ``quantities.MAX_LENGTH`` characters), is negative, or is beyond what an int64
holds in its base unit (millicores for cpu), an integer beyond its int32 or int64 field
(priorities, image sizes), a sub-object the API server's validation refuses (``shapes``), and
a timestamp that is not RFC 3339, raise ``ProjectionError`` naming the field's path. The live
caches skip such an object (counted); the offline plan refuses its file (exit 2).

Pure: dicts in, frozen model objects out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from agent.config.schema import INT64_MAX
from agent.descheduler.cache.shapes import (
    AFFINITY,
    BUDGET_SPEC,
    BUDGET_STATUS,
    INT32_MAX,
    SPREAD,
    TAINTS,
    TOLERATIONS,
    int_problem,
    misfit,
)
from agent.descheduler.model.cluster import (
    CPU,
    PODS,
    ClaimInfo,
    ClusterSnapshot,
    DisruptionBudget,
    NodeInfo,
    OwnerRef,
    PodInfo,
)
from agent.descheduler.model.keys import KEPT_ANNOTATIONS, SPREAD_CONSTRAINTS, UNSCHEDULABLE_SINCE
from agent.descheduler.model.podstatus import (
    STATUS,
    ContainerStatusInfo,
    PodConditionInfo,
    PodStatusInfo,
    container_status,
)
from agent.descheduler.model.values import EMPTY_MAP
from agent.kubesemantics.pods import is_mirror_pod, is_static_pod
from agent.kubesemantics.qos import pod_qos
from agent.kubesemantics.quantities import MAX_LENGTH, parse_quantity
from agent.kubesemantics.taintownership import OWNED_ANNOTATIONS
from agent.kubesemantics.timestamps import parse_rfc3339
from agent.kubesemantics.wellknown import POD_SCHEDULED, READY, UNSCHEDULABLE

KEPT_NODE_ANNOTATIONS = OWNED_ANNOTATIONS
"""A node's annotations that record which of its taints we added; the rest are dropped."""

JsonObject = Mapping[str, Any]

MAX_AMOUNT = 2**63 - 1
"""The largest amount a quantity may come to, in its base unit (millicores for cpu): what the
int64 of every Kubernetes consumer (``Quantity.Value()``, ``MilliValue()``) holds."""
POD_LEVEL_RESOURCES = frozenset({CPU, "memory"})
"""What pod-level ``spec.resources`` may set, besides ``hugepages-*``."""


class ProjectionError(ValueError):
    """A field of an object is not what the API server would have stored."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


def shaped(value: Any, shape: Any, path: str) -> Any:
    """``value`` as sent, after checking it has the shape the API server enforces
    (``shapes``); ``ProjectionError`` at the offending field otherwise."""
    if value is None:
        return None
    problem = misfit(value, shape)
    if problem is not None:
        where, reason = problem
        raise ProjectionError(f"{path}{where}", reason)
    return value


def checked_int32(value: Any, path: str) -> int:
    """``value`` if it is an integer an int32 API field holds; ``ProjectionError`` if not."""
    if problem := int_problem(value, -INT32_MAX - 1, INT32_MAX):
        raise ProjectionError(path, problem)
    return int(value)


def priority_class_value(obj: JsonObject) -> int:
    """A PriorityClass's ``value`` (an int32; absent: 0)."""
    value = obj.get("value")
    return 0 if value is None else checked_int32(value, "value")


def _pod_level(name: str) -> bool:
    return name in POD_LEVEL_RESOURCES or name.startswith("hugepages-")


_WHOLE_SUFFIXES = {
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def fast_amount(value: Any, *, millis: bool) -> int | None:
    """The common forms (``2``, ``100m``, ``512Mi``, ``1G``) in integer arithmetic.

    ``None`` for any other form (decimals, exponents, signs, spaces, ``n``/``u``, floats):
    the caller then takes the exact ``Fraction`` path. Equal to it wherever it answers
    (a test compares the two on a table and on the parity fixture).
    """
    if type(value) is int:
        return value * 1000 if millis else value
    if type(value) is not str or len(value) > MAX_LENGTH or not value.isascii():
        return None  # (too long: the exact path refuses it unparsed)
    if value[-1:] == "m":
        digits, scale = value[:-1], 0
    elif value[-1:] == "i":
        digits, scale = value[:-2], _WHOLE_SUFFIXES.get(value[-2:], -1)
    elif value[-1:].isdigit():
        digits, scale = value, 1
    else:
        digits, scale = value[:-1], _WHOLE_SUFFIXES.get(value[-1:], -1)
    if scale < 0 or not digits.isdigit():
        return None
    number = int(digits)
    if scale == 0:  # milli-units: already millis, or rounded up to whole units
        return number if millis else -(-number // 1000)
    return number * scale * 1000 if millis else number * scale


def _exact(value: Any, path: str) -> Any:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError, AttributeError) as error:
        raise ProjectionError(path, f"not a quantity: {value!r:.60}") from error


def _checked(amount: int, value: Any, path: str) -> int:
    if amount < 0:
        raise ProjectionError(path, f"negative quantity {value!r:.60}")
    if amount > MAX_AMOUNT:
        raise ProjectionError(path, f"quantity {value!r:.60} is too large")
    return amount


def _ceil(value: Any, path: str = "") -> int:
    fast = fast_amount(value, millis=False)
    if fast is not None:
        return _checked(fast, value, path)
    exact = _exact(value, path)
    return _checked(-((-exact.numerator) // exact.denominator), value, path)


def _millis(value: Any, path: str = "") -> int:
    fast = fast_amount(value, millis=True)
    if fast is not None:
        return _checked(fast, value, path)
    exact = _exact(value, path) * 1000
    return _checked(-((-exact.numerator) // exact.denominator), value, path)


def resource_list(raw: Any, path: str = "") -> dict[str, int]:
    """A ``ResourceList`` as integers: CPU in millicores, the rest rounded up."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ProjectionError(path, "not a map of quantities")
    parsed: dict[str, int] = {}
    for name, value in raw.items():
        where = f"{path}.{name}" if path else str(name)
        parsed[str(name)] = _millis(value, where) if name == CPU else _ceil(value, where)
    return parsed


def _container_requests(container: Any, path: str) -> dict[str, int]:
    if not isinstance(container, Mapping):
        raise ProjectionError(path, "not an object")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise ProjectionError(f"{path}.resources", "not an object")
    requests = resource_list(resources.get("requests"), f"{path}.resources.requests")
    # The API server defaults a missing request to its limit before storing the pod.
    for name, limit in resource_list(resources.get("limits"), f"{path}.resources.limits").items():
        requests.setdefault(name, limit)
    return requests


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, 0) + amount


def _raise_to(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def _listed(spec: Mapping[str, Any], key: str) -> list[Any]:
    value = spec.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProjectionError(f"spec.{key}", "not a list")
    return value


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective requests of a pod spec (``resourcehelper.PodRequests``), plus ``pods: 1``."""
    total: dict[str, int] = {}
    for index, container in enumerate(_listed(spec, "containers")):
        _add(total, _container_requests(container, f"spec.containers[{index}]"))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for index, container in enumerate(_listed(spec, "initContainers")):
        requests = _container_requests(container, f"spec.initContainers[{index}]")
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
            _raise_to(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, requests)
            _raise_to(init_peak, running)
    _add(total, sidecars)
    _raise_to(total, init_peak)
    _pod_level_requests(spec.get("resources"), total)
    _add(total, resource_list(spec.get("overhead"), "spec.overhead"))
    total[PODS] = 1
    return total


def _pod_level_requests(resources: Any, total: dict[str, int]) -> None:
    """Pod-level ``spec.resources`` over the containers' sum (``IsPodLevelRequestsSet``):
    a supported resource's pod-level request replaces it; a pod-level limit stands in for a
    request neither the pod nor any container sets (the API server's defaulting)."""
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        raise ProjectionError("spec.resources", "not an object")
    requests = resource_list(resources.get("requests"), "spec.resources.requests")
    limits = resource_list(resources.get("limits"), "spec.resources.limits")
    total.update({name: amount for name, amount in requests.items() if _pod_level(name)})
    for name, amount in limits.items():
        if _pod_level(name) and name not in requests and not total.get(name):
            total[name] = amount


def _condition_true(status: Mapping[str, Any], kind: str) -> bool | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return bool(condition.get("status") == "True")
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]  # a JSON object
    return None


def unschedulable_since(node_name: str, status: Mapping[str, Any]) -> float | None:
    """When the scheduler last said it cannot place this unbound pod; ``None`` otherwise."""
    if node_name:
        return None
    condition = _condition(status, POD_SCHEDULED)
    if condition is None or condition.get("status") != "False":
        return None
    if condition.get("reason") != UNSCHEDULABLE:
        return None
    return parse_timestamp(condition.get("lastTransitionTime"), "status.conditions") or 0.0


def parse_timestamp(value: Any, path: str = "") -> float | None:
    """Unix seconds of an API timestamp; ``None`` when absent; ``ProjectionError`` when it
    is not RFC 3339 (the API server stores none such)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ProjectionError(path, f"not a timestamp: {value!r:.60}")
    try:
        return parse_rfc3339(value)
    except (ValueError, OverflowError) as error:
        raise ProjectionError(path, f"not an RFC 3339 timestamp: {value!r:.60}") from error


def owner_refs(metadata: Mapping[str, Any]) -> tuple[OwnerRef, ...]:
    """``metadata.ownerReferences`` as the model's owners."""
    return tuple(
        OwnerRef(
            kind=str(owner.get("kind") or ""),
            name=str(owner.get("name") or ""),
            uid=str(owner.get("uid") or ""),
            controller=owner.get("controller") is True,
        )
        for owner in metadata.get("ownerReferences") or []
    )


def _volumes(spec: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    local = False
    claims: list[str] = []
    for volume in spec.get("volumes") or []:
        if "emptyDir" in volume or "hostPath" in volume:
            local = True
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, Mapping) and claim.get("claimName"):
            claims.append(str(claim["claimName"]))
    return local, tuple(claims)


def _container_statuses(raw: Any) -> tuple[ContainerStatusInfo, ...]:
    kept = []
    for each in raw or ():
        state = each.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        restarts = each.get("restartCount")
        info = container_status(
            restarts if type(restarts) is int else 0,
            None if waiting is None else str(waiting.get("reason") or ""),
            None if terminated is None else str(terminated.get("reason") or ""),
            _optional_int(None if terminated is None else terminated.get("exitCode")),
        )
        if info is not None:
            kept.append(info)
    return tuple(kept)


def pod_status(status: Mapping[str, Any], created: float) -> PodStatusInfo | None:
    """What the pod-state plugins read of ``status`` (see ``podstatus``); ``None`` if nothing."""
    conditions = []
    for condition in status.get("conditions") or ():
        moved = parse_timestamp(condition.get("lastTransitionTime"), "status.conditions")
        conditions.append(
            PodConditionInfo(
                type=str(condition.get("type") or ""),
                status=str(condition.get("status") or ""),
                reason=str(condition.get("reason") or ""),
                since_creation=None if moved is None else moved - created,
            )
        )
    info = PodStatusInfo(
        reason=str(status.get("reason") or ""),
        containers=_container_statuses(status.get("containerStatuses")),
        init_containers=_container_statuses(status.get("initContainerStatuses")),
        ephemeral_containers=_container_statuses(status.get("ephemeralContainerStatuses")),
        conditions=tuple(conditions),
    )
    return None if info.empty else info


def project_pod(pod: JsonObject, *, with_status: bool = True) -> PodInfo:
    """The pod as the plugins see it; ``with_status=False`` leaves out the pod-state details
    (``extra[STATUS]``), for a policy whose plugins never read them."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    namespace = str(metadata.get("namespace") or "")
    name = str(metadata.get("name") or "")
    annotations = metadata.get("annotations") or {}
    kept = {key: str(annotations[key]) for key in KEPT_ANNOTATIONS if key in annotations}
    local_storage, claims = _volumes(spec)
    priority = spec.get("priority")
    if priority is not None:
        checked_int32(priority, "spec.priority")
    created = parse_timestamp(metadata.get("creationTimestamp"), "metadata.creationTimestamp")
    created = created or 0.0
    extra: dict[str, Any] = {}
    if spec.get("resourceClaims"):
        extra["resourceClaims"] = True
    if spread := shaped(
        spec.get("topologySpreadConstraints"), SPREAD, "spec.topologySpreadConstraints"
    ):
        extra[SPREAD_CONSTRAINTS] = tuple(spread)
    since = unschedulable_since(str(spec.get("nodeName") or ""), status)
    if since is not None:
        extra[UNSCHEDULABLE_SINCE] = since
    if with_status and (status_info := pod_status(status, created)) is not None:
        extra[STATUS] = status_info
    return PodInfo(
        namespace=namespace,
        name=name,
        # The UID keys eviction bookkeeping; hand-written pods without one fall back to the
        # key, which is unique within one snapshot.
        uid=str(metadata.get("uid") or f"{namespace}/{name}"),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or ""),
        creation_timestamp=created,
        start_time=parse_timestamp(status.get("startTime"), "status.startTime"),
        deleting=bool(metadata.get("deletionTimestamp")),
        labels=dict(metadata.get("labels") or EMPTY_MAP),
        annotations=kept or EMPTY_MAP,
        owners=owner_refs(metadata),
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        requests=pod_requests(spec),
        qos=pod_qos(pod).value,
        mirror=is_mirror_pod(pod),
        static=is_static_pod(pod),
        node_selector=dict(spec.get("nodeSelector") or EMPTY_MAP),
        affinity=shaped(spec.get("affinity"), AFFINITY, "spec.affinity") or None,
        tolerations=tuple(shaped(spec.get("tolerations"), TOLERATIONS, "spec.tolerations") or ()),
        local_storage=local_storage,
        pvc_claims=claims,
        images=tuple(sorted(str(c.get("image") or "") for c in spec.get("containers") or [])),
        ready=_condition_true(status, READY) is True,
        extra=extra or EMPTY_MAP,
    )


def project_node(node: JsonObject, *, with_images: bool = False) -> NodeInfo:
    """The node as the plugins see it; ``with_images`` keeps ``status.images`` (each name
    of each image, with its size), which only the offline plan's placement reads."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    allocatable = resource_list(status.get("allocatable"), "status.allocatable") or resource_list(
        status.get("capacity"), "status.capacity"
    )
    ready = _condition(status, READY)
    annotations = metadata.get("annotations") or {}
    kept = {key: str(annotations[key]) for key in KEPT_NODE_ANNOTATIONS if key in annotations}
    return NodeInfo(
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        labels=dict(metadata.get("labels") or EMPTY_MAP),
        taints=tuple(shaped(spec.get("taints"), TAINTS, "spec.taints") or ()),
        allocatable=allocatable,
        unschedulable=spec.get("unschedulable") is True,
        ready=_condition_true(status, READY) is not False,
        ready_transition=None
        if ready is None
        else parse_timestamp(ready.get("lastTransitionTime"), "status.conditions"),
        boot_id=str((status.get("nodeInfo") or {}).get("bootID") or ""),
        annotations=kept or EMPTY_MAP,
        images=_images(status.get("images")) if with_images else EMPTY_MAP,
    )


def _images(listed: Any) -> Mapping[str, int]:
    """``status.images`` as the scheduler's image states read them: every name of every
    image, with the image's size (a size that is not a non-negative integer counts 0; one
    beyond the field's int64, which the API server cannot have stored, is an error)."""
    if not isinstance(listed, list):
        return EMPTY_MAP
    sizes: dict[str, int] = {}
    for index, image in enumerate(listed):
        if not isinstance(image, dict):
            continue
        size = image.get("sizeBytes")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            size = 0
        elif size > INT64_MAX:
            raise ProjectionError(f"status.images[{index}].sizeBytes", "beyond int64")
        for name in image.get("names") or ():
            if isinstance(name, str):
                sizes.setdefault(sys.intern(name), size)
    return sizes or EMPTY_MAP


def _int_or_percent(value: Any) -> int | str | None:
    if isinstance(value, bool) or value is None:
        return None
    return value if isinstance(value, int | str) else None


def project_disruption_budget(pdb: JsonObject) -> DisruptionBudget:
    metadata = pdb.get("metadata") or {}
    spec = pdb.get("spec") or {}
    status = pdb.get("status") or {}
    shaped(spec, BUDGET_SPEC, "spec")
    shaped(status, BUDGET_STATUS, "status")
    allowed = status.get("disruptionsAllowed")
    return DisruptionBudget(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        selector=spec.get("selector"),
        min_available=_int_or_percent(spec.get("minAvailable")),
        max_unavailable=_int_or_percent(spec.get("maxUnavailable")),
        disruptions_allowed=allowed if isinstance(allowed, int) else 0,
        unhealthy_pod_eviction_policy=str(
            spec.get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
        ),
        current_healthy=_optional_int(status.get("currentHealthy")),
        desired_healthy=_optional_int(status.get("desiredHealthy")),
    )


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def project_claim(claim: JsonObject) -> ClaimInfo:
    metadata = claim.get("metadata") or {}
    return ClaimInfo(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        storage_class=str((claim.get("spec") or {}).get("storageClassName") or ""),
    )


def _kind(item: JsonObject, default: str) -> str:
    return str(item.get("kind") or default)


def snapshot_from_list(
    items: Iterable[JsonObject], now: float, *, default_kind: str = ""
) -> ClusterSnapshot:
    """A snapshot from the items of a ``kubectl get -o json`` List (any mix of kinds).

    Kinds read: Node, Pod, Namespace, PodDisruptionBudget, PersistentVolumeClaim,
    PriorityClass; anything else is ignored. ``default_kind`` names items without ``kind``
    (the items of a typed list such as ``PodList`` carry none). Node images are kept, as a
    snapshot file's are.
    """
    nodes: dict[str, NodeInfo] = {}
    pods_by_node: dict[str, list[PodInfo]] = {}
    namespaces: dict[str, Mapping[str, str]] = {}
    budgets: dict[str, list[DisruptionBudget]] = {}
    claims: dict[str, ClaimInfo] = {}
    priority_classes: dict[str, int] = {}
    for item in items:
        kind = _kind(item, default_kind)
        if kind == "Pod":
            pod = project_pod(item)
            pods_by_node.setdefault(pod.node_name, []).append(pod)
        elif kind == "Node":
            node = project_node(item, with_images=True)
            nodes[node.name] = node
        elif kind == "Namespace":
            metadata = item.get("metadata") or {}
            namespaces[str(metadata.get("name") or "")] = dict(metadata.get("labels") or {})
        elif kind == "PodDisruptionBudget":
            budget = project_disruption_budget(item)
            budgets.setdefault(budget.namespace, []).append(budget)
        elif kind == "PersistentVolumeClaim":
            claim = project_claim(item)
            claims[f"{claim.namespace}/{claim.name}"] = claim
        elif kind == "PriorityClass":
            value = item.get("value")
            if isinstance(value, int) and not isinstance(value, bool):
                priority_classes[str((item.get("metadata") or {}).get("name") or "")] = value
    return ClusterSnapshot(
        nodes=nodes,
        pods_by_node=pods_by_node,
        namespaces=namespaces,
        disruption_budgets=budgets,
        claims=claims,
        priority_classes=priority_classes,
        now=now,
    )
