"""Builders of Kubernetes objects as plain API JSON: one for each kind, shared by every test,
benchmark and the sample snapshot.

Why one module: a pod, a node or a PodDisruptionBudget used to be spelled out by seven
builders, each with its own defaults and its own idea of which fields exist. Here each kind
has one builder whose keyword arguments cover what any caller needs, and whose defaults give
the plainest valid object: a pod is its name, the ``default`` namespace and one container
``app``; a node is its name. Nothing else appears unless asked for (no uid, no status, no
empty lists), so a test that needs a field says so. A domain that always wants other
defaults (the descheduler's "owned by ReplicaSet rs, 100m and 256Mi") states them once in its
own module as a ``functools.partial`` of these, or a two-line wrapper that only sets them.

Every object carries ``apiVersion`` and ``kind``, so the fake API server creates it as it is
and the descheduler's projection reads it as a watch would deliver it. Arguments named after
a field (``node_selector``, ``grace_seconds``) fill that field; ``metadata``, ``spec`` and
``status`` mappings are merged last, for the fields no argument names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent.kube.resources import NODE_REPORTS

JSON = dict[str, Any]

IMAGE = "registry.example/app:1.0"
"""The image of a container nobody named an image for."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
DELETED = "2026-01-02T00:00:00Z"
"""The ``deletionTimestamp`` of an object built with ``deleting=True``."""
DEFAULT_TOLERATIONS: tuple[JSON, ...] = tuple(
    {
        "key": f"node.kubernetes.io/{taint}",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    for taint in ("not-ready", "unreachable")
)
"""What the DefaultTolerationSeconds admission plugin adds to every pod an API server stores."""

# The group/version of the controllers that own pods, for owner references.
_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}


def _status(flag: bool) -> str:
    return "True" if flag else "False"


def _given(fields: Mapping[str, Any]) -> JSON:
    """``fields`` without the unset ones (None, False, empty), so defaults add nothing."""
    return {k: v for k, v in fields.items() if v is not None and v is not False and v != []}


def _merged(built: JSON, extra: Mapping[str, Any] | None) -> JSON:
    if extra:
        built.update(extra)
    return built


# -- pods -----------------------------------------------------------------------------------


def owner_ref(
    kind: str,
    name: str,
    *,
    uid: str | None = None,
    api_version: str | None = None,
    controller: bool | None = True,
    block_owner_deletion: bool | None = None,
) -> JSON:
    """One ``metadata.ownerReferences`` entry: ``uid`` defaults to ``uid-<kind>-<name>``,
    ``api_version`` to the kind's (``v1`` for kinds not listed, e.g. ReplicationController);
    ``controller=None`` leaves the field out."""
    ref: JSON = {
        "apiVersion": api_version or _API_VERSIONS.get(kind, "v1"),
        "kind": kind,
        "name": name,
        "uid": uid or f"uid-{kind}-{name}",
    }
    if controller is not None:
        ref["controller"] = controller
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def controller_ref(obj: Mapping[str, Any]) -> JSON:
    """The reference a controller puts on the pods it creates: ``obj``'s apiVersion, kind,
    name and uid, ``controller`` and ``blockOwnerDeletion`` true."""
    metadata = obj["metadata"]
    return owner_ref(
        obj["kind"],
        metadata["name"],
        uid=metadata["uid"],
        api_version=obj.get("apiVersion"),
        block_owner_deletion=True,
    )


def container(
    name: str = "app",
    image: str = IMAGE,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> JSON:
    """A container; ``cpu`` and ``memory`` are requests (``requests`` adds other resources);
    ``fields`` are the container's other fields (ports, env, ...). ``resources`` appears when
    any of its arguments is given, if only ``requests={}`` (as the API server shows a
    container that asks for nothing)."""
    built: JSON = {"name": name, "image": image}
    wanted = {**(requests or {})}
    wanted.update({k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None})
    if wanted or requests is not None or limits is not None:
        resources: JSON = {}
        if wanted:
            resources["requests"] = wanted
        if limits:
            resources["limits"] = dict(limits)
        built["resources"] = resources
    return _merged(built, fields)


def container_status(
    name: str = "app",
    *,
    ready: bool = True,
    container_id: str | None = None,
    fields: Mapping[str, Any] | None = None,
) -> JSON:
    """One entry of ``status.containerStatuses``, with only what the agent reads; ``fields``
    adds the rest a kubelet writes (image, imageID, restartCount, state...)."""
    built: JSON = {"name": name, "ready": ready}
    if container_id is not None:
        built["containerID"] = container_id
    return _merged(built, fields)


def condition(kind: str, status: bool = True, **fields: Any) -> JSON:
    """A condition of type ``kind``; ``fields`` adds reason, lastTransitionTime..."""
    return {"type": kind, "status": _status(status), **fields}


def _pod_spec(
    *,
    node: str | None,
    containers: Iterable[str | Mapping[str, Any]],
    image: str,
    cpu: str | None,
    memory: str | None,
    limits: Mapping[str, str] | None,
    resources: Mapping[str, Any] | None,
    priority: int | None,
    priority_class: str | None,
    grace_seconds: int | None,
    volumes: Iterable[Mapping[str, Any]],
    tolerations: Iterable[Mapping[str, Any]],
    node_selector: Mapping[str, str] | None,
    affinity: Mapping[str, Any] | None,
    topology_spread: Iterable[Mapping[str, Any]],
    host_network: bool,
    spec: Mapping[str, Any] | None,
) -> JSON:
    built: JSON = {}
    optional: dict[str, Any] = {
        "containers": [
            container(each, image, cpu=cpu, memory=memory, limits=limits)
            if isinstance(each, str)
            else dict(each)
            for each in containers
        ],
        "nodeName": node,
        "priority": priority,
        "priorityClassName": priority_class,
        "terminationGracePeriodSeconds": grace_seconds,
        "volumes": [dict(each) for each in volumes],
        "tolerations": [dict(each) for each in tolerations],
        "nodeSelector": None if node_selector is None else dict(node_selector),
        "affinity": None if affinity is None else dict(affinity),
        "topologySpreadConstraints": [dict(each) for each in topology_spread],
        "resources": None if resources is None else dict(resources),
        "hostNetwork": host_network,
    }
    built.update(_given(optional))
    return _merged(built, spec)


def _metadata(
    name: str,
    namespace: str | None,
    *,
    uid: str | None,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    created: str | None = None,
    owner: Mapping[str, Any] | None = None,
    deleting: bool | str = False,
    finalizers: Iterable[str] = (),
    resource_version: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> JSON:
    built: JSON = {"name": name}
    optional: dict[str, Any] = {
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": resource_version,
        "creationTimestamp": created,
        "deletionTimestamp": (DELETED if deleting is True else deleting) or None,
        "labels": None if labels is None else dict(labels),
        "annotations": None if annotations is None else dict(annotations),
        "ownerReferences": None if owner is None else [dict(owner)],
        "finalizers": list(finalizers) or None,
    }
    built.update({k: v for k, v in optional.items() if v is not None})
    return _merged(built, metadata)


def pod(
    name: str,
    node: str | None = None,
    *,
    namespace: str = "default",
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
    created: str | None = None,
    deleting: bool | str = False,
    finalizers: Iterable[str] = (),
    containers: Iterable[str | Mapping[str, Any]] = ("app",),
    image: str = IMAGE,
    cpu: str | None = None,
    memory: str | None = None,
    limits: Mapping[str, str] | None = None,
    resources: Mapping[str, Any] | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    grace_seconds: int | None = None,
    volumes: Iterable[Mapping[str, Any]] = (),
    tolerations: Iterable[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    topology_spread: Iterable[Mapping[str, Any]] = (),
    phase: str | None = None,
    ready: bool | None = None,
    scheduled: bool | None = None,
    conditions: Iterable[Mapping[str, Any]] = (),
    container_statuses: Iterable[Mapping[str, Any]] = (),
    start_time: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    """A pod, bound to ``node`` if given.

    Containers: each name in ``containers`` is a ``container`` of ``image`` with ``cpu`` and
    ``memory`` requested and ``limits``; a mapping (from ``container(...)``) is taken as it is.
    ``resources`` are the pod-level resources. ``owner`` is one ``owner_ref(...)`` or
    ``controller_ref(...)``.
    ``deleting`` is True (deleted at ``DELETED``) or the deletionTimestamp itself.
    Status: ``scheduled`` and ``ready`` are the PodScheduled and Ready conditions (not Ready
    with kubelet's ``ContainersNotReady``), then ``conditions`` as given; ``status`` appears
    only when one of its arguments is given.
    """
    built: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(
            name,
            namespace,
            uid=uid,
            labels=labels,
            annotations=annotations,
            created=created,
            owner=owner,
            deleting=deleting,
            finalizers=finalizers,
            metadata=metadata,
        ),
        "spec": _pod_spec(
            node=node,
            containers=containers,
            image=image,
            cpu=cpu,
            memory=memory,
            limits=limits,
            resources=resources,
            priority=priority,
            priority_class=priority_class,
            grace_seconds=grace_seconds,
            volumes=volumes,
            tolerations=tolerations,
            node_selector=node_selector,
            affinity=affinity,
            topology_spread=topology_spread,
            host_network=False,
            spec=spec,
        ),
    }
    listed: list[JSON] = []
    if scheduled is not None:
        listed.append(condition("PodScheduled", scheduled))
    if ready is not None:
        reason = {} if ready else {"reason": "ContainersNotReady"}
        listed.append(condition("Ready", ready, **reason))
    listed += [dict(each) for each in conditions]
    optional: dict[str, Any] = {
        "phase": phase,
        "conditions": listed or None,
        "startTime": start_time,
        "containerStatuses": [dict(each) for each in container_statuses] or None,
    }
    pod_status = {k: v for k, v in optional.items() if v is not None}
    if pod_status or status:
        built["status"] = _merged(pod_status, status)
    return built


# -- nodes ----------------------------------------------------------------------------------


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> JSON:
    """A node taint."""
    built: JSON = {"key": key, "effect": effect}
    if value is not None:
        built["value"] = value
    return built


def node(
    name: str,
    *,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    created: str | None = None,
    resource_version: str | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    ready: bool | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    pods: str | None = None,
    images: Mapping[str, int] | None = None,
    metadata: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    """A node. ``ready`` is its Ready condition (as its kubelet posts it); ``cpu``,
    ``memory`` and ``pods`` its allocatable; ``images`` its ``status.images`` (name -> size in
    bytes). ``status`` appears only when one of its arguments is given."""
    node_spec: JSON = {}
    if taints := list(taints):
        node_spec["taints"] = [dict(each) for each in taints]
    if unschedulable:
        node_spec["unschedulable"] = True
    node_status: JSON = {}
    allocatable = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("pods", pods)) if v}
    if allocatable:
        node_status["allocatable"] = allocatable
    if ready is not None:
        reason = "KubeletReady" if ready else "KubeletNotReady"
        node_status["conditions"] = [condition("Ready", ready, reason=reason)]
    if images:
        node_status["images"] = [{"names": [n], "sizeBytes": size} for n, size in images.items()]
    built: JSON = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _metadata(
            name,
            None,
            uid=uid,
            labels=labels,
            annotations=annotations,
            created=created,
            resource_version=resource_version,
            metadata=metadata,
        ),
        "spec": _merged(node_spec, spec),
    }
    if node_status or status:
        built["status"] = _merged(node_status, status)
    return built


def csinode(node_name: str, drivers: Iterable[str] = ()) -> JSON:
    """The CSINode of ``node_name`` with these drivers registered."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node_name},
        "spec": {"drivers": [{"name": d, "nodeID": node_name} for d in drivers]},
    }


# -- workloads and policy -------------------------------------------------------------------


def daemon_set(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    containers: Iterable[str | Mapping[str, Any]] = ("app",),
    image: str = IMAGE,
    tolerations: Iterable[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    host_network: bool = False,
    node: str | None = None,
    spec: Mapping[str, Any] | None = None,
) -> JSON:
    """A DaemonSet selecting, and templating pods labelled, ``app=<name>``; the pod-spec
    arguments are ``pod``'s, for its template (``spec`` adds to the template's spec)."""
    template_spec = _pod_spec(
        node=node,
        containers=containers,
        image=image,
        cpu=None,
        memory=None,
        limits=None,
        resources=None,
        priority=None,
        priority_class=None,
        grace_seconds=None,
        volumes=(),
        tolerations=tolerations,
        node_selector=node_selector,
        affinity=affinity,
        topology_spread=(),
        host_network=host_network,
        spec=spec,
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _metadata(name, namespace, uid=uid, labels=labels, annotations=None),
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
        },
    }


_STRATEGY_FIELDS = {"Deployment": "strategy", "StatefulSet": "updateStrategy"}


def workload(
    kind: str,
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    created: str | None = None,
    replicas: int | None = None,
    strategy: str | None = None,
    max_unavailable: int | str | None = None,
    max_surge: int | str | None = None,
    owner: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> JSON:
    """A Deployment, ReplicaSet, StatefulSet or ReplicationController (``kind``) selecting,
    and templating pods labelled, ``app=<name>``: ``strategy`` is the rollout's type
    (``spec.strategy`` of a Deployment, ``spec.updateStrategy`` of a StatefulSet) with its
    rolling update's ``max_unavailable``/``max_surge``; ``owner`` a ReplicaSet's Deployment
    (``owner_ref(...)``)."""
    labels = {"app": name}
    built_spec: JSON = {
        # A ReplicationController's selector is a plain label map.
        "selector": labels if kind == "ReplicationController" else {"matchLabels": labels},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}},
    }
    if replicas is not None:
        built_spec["replicas"] = replicas
    rolling = {"maxUnavailable": max_unavailable, "maxSurge": max_surge}
    rolling = {key: value for key, value in rolling.items() if value is not None}
    if strategy is not None or rolling:
        rollout: JSON = {"type": strategy or "RollingUpdate"}
        if rolling:
            rollout["rollingUpdate"] = rolling
        built_spec[_STRATEGY_FIELDS[kind]] = rollout
    return {
        "apiVersion": _API_VERSIONS.get(kind, "v1"),
        "kind": kind,
        "metadata": _metadata(
            name, namespace, uid=uid, labels=None, annotations=None, created=created, owner=owner
        ),
        "spec": _merged(built_spec, spec),
    }


def pdb(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    created: str | None = None,
    match_labels: Mapping[str, str] | None = None,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_pod_eviction_policy: str | None = None,
    disruptions_allowed: int | None = None,
    metadata: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    """A policy/v1 PodDisruptionBudget selecting ``match_labels``; ``disruptions_allowed``
    is its status as the disruption controller would compute it."""
    budget_spec: JSON = {"selector": {"matchLabels": dict(match_labels or {})}}
    optional = {
        "minAvailable": min_available,
        "maxUnavailable": max_unavailable,
        "unhealthyPodEvictionPolicy": unhealthy_pod_eviction_policy,
    }
    budget_spec.update({k: v for k, v in optional.items() if v is not None})
    built: JSON = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _metadata(
            name,
            namespace,
            uid=uid,
            labels=None,
            annotations=None,
            created=created,
            metadata=metadata,
        ),
        "spec": budget_spec,
    }
    budget_status = (
        {} if disruptions_allowed is None else {"disruptionsAllowed": disruptions_allowed}
    )
    if budget_status or status:
        built["status"] = _merged(budget_status, status)
    return built


def namespace(
    name: str,
    *,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    created: str | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    """A Namespace."""
    built: JSON = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _metadata(
            name, None, uid=uid, labels=labels, annotations=None, created=created
        ),
    }
    if spec:
        built["spec"] = dict(spec)
    if status:
        built["status"] = dict(status)
    return built


def priority_class(
    name: str,
    value: int,
    *,
    uid: str | None = None,
    preemption_policy: str | None = None,
) -> JSON:
    """A scheduling.k8s.io/v1 PriorityClass of ``value``."""
    built: JSON = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _metadata(name, None, uid=uid, labels=None, annotations=None),
        "value": value,
    }
    if preemption_policy is not None:
        built["preemptionPolicy"] = preemption_policy
    return built


def crd(
    group: str,
    kind: str,
    plural: str,
    *,
    scope: str = "Namespaced",
    versions: Iterable[str] = ("v1",),
    status_subresource: bool = True,
) -> JSON:
    """A CustomResourceDefinition that keeps any field (first version is the storage one)."""
    version_list: list[JSON] = []
    for index, version in enumerate(versions):
        entry: JSON = {
            "name": version,
            "served": True,
            "storage": index == 0,
            "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
        if status_subresource:
            entry["subresources"] = {"status": {}}
        version_list.append(entry)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": version_list,
        },
    }


METRICS_API_VERSION = "metrics.k8s.io/v1beta1"


def node_metrics(name: str, cpu: str, memory: str = "1Gi") -> JSON:
    """metrics-server's NodeMetrics of ``name``: its usage now (``window`` 10 s)."""
    return {
        "apiVersion": METRICS_API_VERSION,
        "kind": "NodeMetrics",
        "metadata": {"name": name},
        "timestamp": "2026-01-01T00:00:00Z",
        "window": "10s",
        "usage": {"cpu": cpu, "memory": memory},
    }


def pod_metrics(
    name: str, containers: Mapping[str, Mapping[str, str]], *, namespace: str = "default"
) -> JSON:
    """metrics-server's PodMetrics: ``containers`` maps each container's name to its usage
    (``{"cpu": "100m", "memory": "64Mi"}``)."""
    return {
        "apiVersion": METRICS_API_VERSION,
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": namespace},
        "timestamp": "2026-01-01T00:00:00Z",
        "window": "10s",
        "containers": [{"name": c, "usage": dict(usage)} for c, usage in containers.items()],
    }


# -- our NodeReport -------------------------------------------------------------------------


def node_report(
    name: str,
    observed: str | None = None,
    *,
    node_name: str | None = None,
    node_uid: str | None = None,
    heartbeat_seconds: int = 60,
    **status: Any,
) -> JSON:
    """A NodeReport (our CRD) as a node's agent writes it: owned by its Node ``node_name``
    (default ``name``) of uid ``node_uid`` (default ``uid-<node>``, the uid
    ``tests.harness.deschedulerstate.node`` gives). Its status: ``observedTime`` ``observed``
    and ``heartbeatSeconds`` when ``observed`` is given, then the ``status`` fields; no status
    when there is none."""
    owner = node_name or name
    report: JSON = {
        "apiVersion": NODE_REPORTS.api_version,
        "kind": NODE_REPORTS.kind,
        "metadata": {
            "name": name,
            "ownerReferences": [
                owner_ref("Node", owner, uid=node_uid or f"uid-{owner}", controller=None)
            ],
        },
    }
    if observed is not None:
        status = {"observedTime": observed, "heartbeatSeconds": heartbeat_seconds, **status}
    if status:
        report["status"] = status
    return report


def list_document(*items: Mapping[str, Any]) -> JSON:
    """A ``v1`` List of ``items``: the document of a snapshot or NodeReports file."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}
