"""The resource registry: which group/version/plural the fake serves, and how each behaves.

Every routing, storage and discovery decision starts from a `ResourceType`, so the per-resource
facts the real server spreads over its REST storages (scope, subresources, field-selector
labels, whether a delete returns the object, whether `metadata.generation` is tracked) are
gathered here as data. Built-ins are registered up front; CustomResourceDefinitions add and
remove entries at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Field-selector labels every type supports (apimachinery's DefaultClusterScopedAttr/...).
_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True)
class ResourceType:
    """One served group/version/resource and the behaviour its REST storage has."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    # Field-selector labels beyond metadata.name/namespace; None accepts any dotted path.
    field_labels: frozenset[str] | None = frozenset()
    tracks_generation: bool = False
    # Delete answers with the deleted object instead of a `Status` (ReturnDeletedObject).
    returns_deleted_object: bool = False
    # A PUT without metadata.resourceVersion is allowed (false for custom resources).
    allow_unconditional_update: bool = True
    # The create strategy drops a client-supplied status (deployments, PDBs, CRs, ...).
    resets_status_on_create: bool = False
    # A custom resource: no strategic merge patch, generation bumps on any non-meta change.
    custom: bool = False
    categories: tuple[str, ...] = ()
    # Supported field-selector labels contributed by a CRD's selectableFields.
    extra_field_labels: frozenset[str] = field(default_factory=frozenset)
    # A CRD's additionalPrinterColumns as (name, type, jsonPath, description), for Tables.
    printer_columns: tuple[tuple[str, str, str, str], ...] = ()
    # Served for get and list only (metrics.k8s.io): any other verb over HTTP is 405.
    read_only: bool = False

    @property
    def key(self) -> str:
        """The storage key: objects of all versions of one group/resource share it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified(self) -> str:
        """`pods`, `daemonsets.apps`: how apimachinery names a GroupResource in messages."""
        return self.key

    @property
    def api_version(self) -> str:
        """The `apiVersion` value of objects served under this type."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """The kind of the list responses, e.g. `PodList`."""
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        """Whether a `status` subresource isolates status writes from the main endpoint."""
        return "status" in self.subresources

    def supports_field(self, label: str) -> bool:
        """Whether `label` may appear in a field selector for this type."""
        if self.field_labels is None:
            return True
        return (
            label in _META_FIELDS
            or label in self.field_labels
            or label in (self.extra_field_labels)
        )

    def verbs(self) -> list[str]:
        """Discovery verbs of the main resource."""
        if self.read_only:
            return ["get", "list"]
        return [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]


def _v1(
    group: str, plural: str, kind: str, *, namespaced: bool = True, **kwargs: Any
) -> ResourceType:
    """A built-in type of version v1; its singular name is its kind in lower case."""
    kwargs.setdefault("singular", kind.lower())
    return ResourceType(group, "v1", plural, kind, namespaced=namespaced, **kwargs)


def _core(plural: str, kind: str, **kwargs: Any) -> ResourceType:
    return _v1("", plural, kind, **kwargs)


def _workload(plural: str, kind: str, short_name: str, **kwargs: Any) -> ResourceType:
    """An apps/v1 controller: generation tracked, status reset on create, in ``all``; its
    subresources are ``status`` and ``scale`` unless given."""
    kwargs.setdefault("subresources", frozenset({"status", "scale"}))
    return _v1(
        "apps",
        plural,
        kind,
        short_names=(short_name,),
        tracks_generation=True,
        resets_status_on_create=True,
        categories=("all",),
        **kwargs,
    )


_POD_FIELDS = frozenset(
    {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    }
)
_EVENT_FIELDS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _core(
        "pods",
        "Pod",
        short_names=("po",),
        subresources=frozenset({"status", "eviction", "binding"}),
        field_labels=_POD_FIELDS,
        tracks_generation=True,
        returns_deleted_object=True,
        categories=("all",),
    ),
    _core(
        "nodes",
        "Node",
        namespaced=False,
        short_names=("no",),
        subresources=frozenset({"status"}),
        field_labels=frozenset({"spec.unschedulable"}),
    ),
    _core(
        "namespaces",
        "Namespace",
        namespaced=False,
        short_names=("ns",),
        subresources=frozenset({"status", "finalize"}),
        field_labels=frozenset({"status.phase"}),
        returns_deleted_object=True,
    ),
    _core("events", "Event", short_names=("ev",), field_labels=_EVENT_FIELDS),
    _core(
        "services",
        "Service",
        short_names=("svc",),
        subresources=frozenset({"status"}),
        field_labels=frozenset({"spec.clusterIP", "spec.type"}),
        returns_deleted_object=True,
        categories=("all",),
    ),
    _core(
        "replicationcontrollers",
        "ReplicationController",
        short_names=("rc",),
        subresources=frozenset({"status", "scale"}),
        tracks_generation=True,
        categories=("all",),
    ),
    _core("configmaps", "ConfigMap", short_names=("cm",)),
    _core("secrets", "Secret", field_labels=frozenset({"type"})),
    _core(
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        short_names=("pvc",),
        subresources=frozenset({"status"}),
    ),
    _core(
        "serviceaccounts",
        "ServiceAccount",
        short_names=("sa",),
        returns_deleted_object=True,
    ),
    _workload("daemonsets", "DaemonSet", "ds", subresources=frozenset({"status"})),
    _workload("deployments", "Deployment", "deploy"),
    _workload("replicasets", "ReplicaSet", "rs", field_labels=frozenset({"status.replicas"})),
    _workload("statefulsets", "StatefulSet", "sts"),
    _v1("storage.k8s.io", "csinodes", "CSINode", namespaced=False),
    _v1(
        "policy",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        short_names=("pdb",),
        subresources=frozenset({"status"}),
        tracks_generation=True,
        resets_status_on_create=True,
    ),
    _v1("coordination.k8s.io", "leases", "Lease"),
    # Stored, never run (no CronJob or Job controller): served for the cronjob overlay.
    _v1(
        "batch",
        "cronjobs",
        "CronJob",
        short_names=("cj",),
        subresources=frozenset({"status"}),
        tracks_generation=True,
        categories=("all",),
    ),
    # prometheus-operator's kinds, stored, never acted on: served (as a cluster with the
    # operator installed serves them) so the monitoring overlay can be dry-run created.
    _v1(
        "monitoring.coreos.com",
        "servicemonitors",
        "ServiceMonitor",
        tracks_generation=True,
    ),
    _v1(
        "monitoring.coreos.com",
        "prometheusrules",
        "PrometheusRule",
        tracks_generation=True,
    ),
    # RBAC and admission policies are stored, never enforced: they are served so that
    # manifests (daemonset/) can be created against the fake, e.g. by kubectl.
    _v1("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", namespaced=False),
    _v1("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    _v1("rbac.authorization.k8s.io", "roles", "Role"),
    _v1("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _v1(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        namespaced=False,
        subresources=frozenset({"status"}),
        tracks_generation=True,
    ),
    _v1(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        namespaced=False,
        tracks_generation=True,
    ),
    _v1(
        "events.k8s.io",
        "events",
        "Event",
        short_names=("ev",),
        # Simplification: stored apart from core/v1 events (the real server shares one
        # storage and converts); any dotted path is accepted as a field label.
        field_labels=None,
    ),
    _v1(
        "scheduling.k8s.io",
        "priorityclasses",
        "PriorityClass",
        namespaced=False,
        short_names=("pc",),
    ),
    _v1(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        subresources=frozenset({"status"}),
        tracks_generation=True,
        returns_deleted_object=True,
    ),
)

METRICS_TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "metrics.k8s.io",
        "v1beta1",
        "nodes",
        "NodeMetrics",
        namespaced=False,
        singular="",
        read_only=True,
    ),
    ResourceType(
        "metrics.k8s.io",
        "v1beta1",
        "pods",
        "PodMetrics",
        namespaced=True,
        singular="",
        read_only=True,
    ),
)
"""metrics-server's aggregated API, as a cluster with metrics-server serves it (not served
until ``FakeApiServer.serve_metrics_api``)."""

# Discovery order of groups, like the real server's (core first, then by priority).
GROUP_ORDER: tuple[str, ...] = (
    "",
    "apps",
    "events.k8s.io",
    "policy",
    "storage.k8s.io",
    "coordination.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "scheduling.k8s.io",
    "apiextensions.k8s.io",
)


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a CustomResourceDefinition serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    kind = str(names.get("kind", ""))
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    result: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = set((version.get("subresources") or {}).keys())
        selectable = frozenset(
            str(item.get("jsonPath", "")).lstrip(".")
            for item in version.get("selectableFields") or []
        )
        result.append(
            ResourceType(
                group=group,
                version=str(version.get("name", "")),
                plural=plural,
                kind=kind,
                namespaced=namespaced,
                singular=str(names.get("singular") or kind.lower()),
                short_names=tuple(names.get("shortNames") or ()),
                subresources=frozenset(subresources),
                tracks_generation=True,
                returns_deleted_object=True,
                allow_unconditional_update=False,
                resets_status_on_create="status" in subresources,
                custom=True,
                categories=tuple(names.get("categories") or ()),
                extra_field_labels=selectable,
                printer_columns=tuple(
                    (
                        str(column.get("name", "")),
                        str(column.get("type", "string")),
                        str(column.get("jsonPath", "")),
                        str(column.get("description", "")),
                    )
                    for column in version.get("additionalPrinterColumns") or []
                ),
            )
        )
    return result


class ResourceRegistry:
    """Thread-safe lookup of served resource types (copy-on-write, readers take no lock)."""

    def __init__(self, types: Iterable[ResourceType] = BUILTIN_TYPES) -> None:
        self._lock = threading.Lock()
        self._types: tuple[ResourceType, ...] = tuple(types)

    def all(self) -> tuple[ResourceType, ...]:
        """Every served type, in registration order."""
        return self._types

    def register(self, types: Iterable[ResourceType]) -> None:
        """Serve `types`, replacing earlier entries of the same group/version/plural."""
        new = list(types)
        with self._lock:
            keep = [
                t
                for t in self._types
                if not any(
                    (t.group, t.version, t.plural) == (n.group, n.version, n.plural) for n in new
                )
            ]
            self._types = (*keep, *new)

    def unregister(self, group: str, plural: str) -> None:
        """Stop serving every version of `plural.group`."""
        with self._lock:
            self._types = tuple(t for t in self._types if (t.group, t.plural) != (group, plural))

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at `/apis/<group>/<version>/<plural>` (or `/api/v1/<plural>`)."""
        for t in self._types:
            if t.group == group and t.version == version and t.plural == plural:
                return t
        return None

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type of objects whose apiVersion/kind are given."""
        group, _, version = api_version.rpartition("/")
        for t in self._types:
            if t.group == group and t.version == version and t.kind == kind:
                return t
        return None

    def by_key(self, key: str) -> ResourceType | None:
        """The preferred (first registered) version of a storage key."""
        for t in self._types:
            if t.key == key:
                return t
        return None

    def resolve(self, name: str) -> ResourceType:
        """Resolve a kubectl-style resource name: `pods`, `po`, `Pod`, `daemonsets.apps`.

        Core types win over same-named types of other groups, as in kubectl.
        """
        resource, _, group = name.partition(".")
        lowered = resource.lower()
        candidates = [t for t in self._types if not group or t.group == group]
        candidates.sort(key=lambda t: 0 if t.group == "" else 1)
        for t in candidates:
            if lowered in (t.plural, t.singular, t.kind.lower()) or lowered in t.short_names:
                return t
        raise KeyError(f"the server doesn't have a resource type {name!r}")

    def groups(self) -> list[tuple[str, list[str]]]:
        """Served groups with their versions, in discovery order (core group included)."""
        seen: dict[str, list[str]] = {}
        for t in self._types:
            versions = seen.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        return sorted(seen.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        """Types served under one group/version (for discovery)."""
        return [t for t in self._types if t.group == group and t.version == version]
