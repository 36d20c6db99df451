"""Per-resource behaviour: defaulting, admission, update rules, delete cascades.

The generic store knows nothing about pods or CRDs; the real server's REST strategies and
admission plugins that matter to a node agent live here instead: empty ``spec`` and
``status`` sections, pod defaults and the Priority and DefaultTolerationSeconds admission
plugins, pod QoS class, the pod-spec update restrictions, pod graceful deletion, the node
status strategy, namespace and CRD lifecycles, and protection of the system priority classes.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from .objects import canonical, deep_copy, labels_of, meta, name_of, now, rfc3339
from .resources import ResourceType, types_from_crd
from .status import forbidden, invalid
from .store import Store, StoredEvent

JSON = dict[str, Any]

SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
HIGHEST_USER_PRIORITY = 1000000000
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public")
DEFAULT_TERMINATION_GRACE_SECONDS = 30
DEFAULT_TOLERATION_SECONDS = 300
"""The DefaultTolerationSeconds admission plugin's default for not-ready and unreachable."""

# Built-in types whose Go structs hold `spec`/`status` as plain (non-pointer) structs: the
# real server always serializes them, as `{}` when empty (plus the fields without
# `omitempty`, as zeros), so a JSON patch may add below them and typed clients can parse them.
_EMPTY: JSON = {}
_ZERO_STATUS: dict[str, JSON] = {
    "daemonsets.apps": dict.fromkeys(
        ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"),
        0,
    ),
    "replicasets.apps": {"replicas": 0},
    "poddisruptionbudgets.policy": dict.fromkeys(
        ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"), 0
    ),
}
_STRUCT_SECTIONS: dict[str, tuple[str, ...]] = {
    "pods": ("spec", "status"),
    "nodes": ("spec", "status"),
    "namespaces": ("spec", "status"),
    "services": ("spec", "status"),
    "persistentvolumeclaims": ("spec", "status"),
    "daemonsets.apps": ("spec", "status"),
    "deployments.apps": ("spec", "status"),
    "replicasets.apps": ("spec", "status"),
    "statefulsets.apps": ("spec", "status"),
    "poddisruptionbudgets.policy": ("spec", "status"),
    "csinodes.storage.k8s.io": ("spec",),
    "leases.coordination.k8s.io": ("spec",),
}


class Strategy:
    """The default: nothing resource-specific (hooks are no-ops, deletes are immediate)."""

    status_writes_metadata = False
    """Whether a write to the status subresource also applies metadata changes (nodes)."""

    def default_sections(self, rt: ResourceType, obj: JSON) -> None:
        """Give a new object the empty ``spec``/``status`` the real server would serialize."""
        for section in _STRUCT_SECTIONS.get(rt.key, ()):
            if not isinstance(obj.get(section), dict):
                obj[section] = {}
        if "status" in _STRUCT_SECTIONS.get(rt.key, ()):
            for field, zero in _ZERO_STATUS.get(rt.key, _EMPTY).items():
                obj["status"].setdefault(field, zero)

    def prepare_for_create(
        self, store: Store, rt: ResourceType, obj: JSON, *, keep_status: bool
    ) -> None:
        """Default and admit a new object (may raise an ApiError)."""

    def prepare_for_update(self, store: Store, rt: ResourceType, new: JSON, old: JSON) -> None:
        """Validate/adjust a main-endpoint update (status isolation is done by the store)."""

    def graceful_period(self, obj: JSON, requested: int | None) -> int | None:  # noqa: ARG002  # interface default
        """The grace period a delete gets, or None if the type deletes immediately."""
        return None

    def before_delete(self, store: Store, rt: ResourceType, obj: JSON) -> None:
        """Runs just before the object is removed (cascades, protection)."""

    def after_commit(self, store: Store, rt: ResourceType, event: StoredEvent) -> None:
        """Runs after every committed write of this type."""


# --- pods --------------------------------------------------------------------------------------


def _image_pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    tag = tail.rpartition(":")[2] if ":" in tail else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_containers(containers: list[JSON]) -> None:
    for container in containers:
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        if "image" in container:
            container.setdefault("imagePullPolicy", _image_pull_policy(str(container["image"])))


def qos_class(spec: JSON) -> str:
    """Pod QoS class from container requests/limits (requests default to limits)."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = {**limits, **(resources.get("requests") or {})}
        if any(r in limits or r in requests for r in ("cpu", "memory")):
            any_set = True
        for resource in ("cpu", "memory"):
            if resource not in limits or str(requests.get(resource)) != str(limits[resource]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _priority_class_type(store: Store) -> ResourceType:
    rt = store.registry.lookup("scheduling.k8s.io", "v1", "priorityclasses")
    if rt is None:  # pragma: no cover - built in
        raise RuntimeError("priorityclasses are not registered")
    return rt


class PodStrategy(Strategy):
    """Pod defaults, Priority admission, QoS, update restrictions and graceful deletion."""

    @override
    def prepare_for_create(
        self, store: Store, rt: ResourceType, obj: JSON, *, keep_status: bool
    ) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_SECONDS)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("securityContext", {})
        spec.setdefault("enableServiceLinks", True)
        _default_containers(spec.setdefault("containers", []))
        _default_containers(spec.get("initContainers") or [])
        self._admit_priority(store, rt, obj)
        _admit_default_tolerations(spec)
        given = obj.get("status")
        status: JSON = given if keep_status and isinstance(given, dict) and given else {}
        status.setdefault("phase", "Pending")
        status["qosClass"] = qos_class(spec)
        obj["status"] = status

    @staticmethod
    def _admit_priority(store: Store, rt: ResourceType, pod: JSON) -> None:
        """The Priority admission plugin: resolve priorityClassName into spec.priority."""
        spec = pod["spec"]
        pc_rt = _priority_class_type(store)
        class_name = spec.get("priorityClassName")
        priority_class: JSON | None = None
        if class_name:
            priority_class = store.peek(pc_rt, "", str(class_name))
            if priority_class is None:
                raise forbidden(
                    rt, name_of(pod), f"no PriorityClass with name {class_name} was found"
                )
        else:
            defaults = [pc for pc in store.iter_objects(pc_rt) if pc.get("globalDefault")]
            if defaults:
                priority_class = min(defaults, key=lambda pc: int(pc.get("value", 0)))
                spec["priorityClassName"] = name_of(priority_class)
        priority = int(priority_class.get("value", 0)) if priority_class else 0
        if spec.get("priority") is not None and int(spec["priority"]) != priority:
            raise forbidden(
                rt,
                name_of(pod),
                f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                f"spec; priority admission controller computed {priority} from the given "
                "PriorityClass name",
            )
        spec["priority"] = priority
        policy = (priority_class or {}).get("preemptionPolicy") or "PreemptLowerPriority"
        spec.setdefault("preemptionPolicy", policy)

    @override
    def prepare_for_update(self, store: Store, rt: ResourceType, new: JSON, old: JSON) -> None:
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        old_tolerations = old_spec.get("tolerations") or []
        new_tolerations = new_spec.get("tolerations") or []
        only_additions = all(t in new_tolerations for t in old_tolerations)
        if canonical(_mutable_masked(old_spec)) != canonical(_mutable_masked(new_spec)) or not (
            only_additions
        ):
            raise invalid(
                rt,
                name_of(old),
                [
                    (
                        "FieldValueForbidden",
                        "spec",
                        "Forbidden: pod updates may not change fields other than "
                        "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                        "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to "
                        "be set to 1 if it was previously negative)",
                    )
                ],
            )

    @override
    def graceful_period(self, obj: JSON, requested: int | None) -> int | None:
        """`podStrategy.CheckGracefulDelete`."""
        spec = obj.get("spec") or {}
        if requested is not None:
            period = requested
        else:
            period = int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName"):
            period = 0
        if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period


def _tolerates_no_execute(tolerations: list[JSON], key: str) -> bool:
    return any(
        toleration.get("key") in (key, "", None)
        and toleration.get("effect") in ("NoExecute", "", None)
        for toleration in tolerations
    )


def _admit_default_tolerations(spec: JSON) -> None:
    """The DefaultTolerationSeconds admission plugin: tolerate not-ready/unreachable 300 s."""
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not _tolerates_no_execute(tolerations, key):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )


# --- nodes -------------------------------------------------------------------------------------


class NodeStrategy(Strategy):
    """`nodeStatusStrategy`: a status write keeps the old spec and applies everything else.

    Unlike most types (``ResetObjectMetaForStatus``), the node status strategy only copies the
    spec back, so a PUT or PATCH of ``nodes/<name>/status`` also changes labels and
    annotations. A client may set the status on create (kubelet registers nodes that way).
    """

    status_writes_metadata = True


def _mutable_masked(spec: JSON) -> JSON:
    """A pod spec without the fields a pod update may change."""
    masked = deep_copy(spec)
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
        masked.pop(key, None)
    if not masked.get("schedulingGates"):
        masked.pop("schedulingGates", None)
    for list_key in ("containers", "initContainers"):
        for container in masked.get(list_key) or []:
            container.pop("image", None)
            container.pop("imagePullPolicy", None)
    return masked


# --- namespaces ----------------------------------------------------------------------------------


class NamespaceStrategy(Strategy):
    """Namespaces: Active phase, the name label, protected system namespaces.

    Simplification: deleting a namespace removes its contents and the namespace at once (the
    real one turns Terminating while the namespace controller empties it).
    """

    @override
    def prepare_for_create(
        self, store: Store, rt: ResourceType, obj: JSON, *, keep_status: bool
    ) -> None:
        metadata = meta(obj)
        labels = labels_of(obj)
        labels["kubernetes.io/metadata.name"] = name_of(obj)
        metadata["labels"] = labels
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}

    @override
    def prepare_for_update(self, store: Store, rt: ResourceType, new: JSON, old: JSON) -> None:
        labels = labels_of(new)
        labels["kubernetes.io/metadata.name"] = name_of(old)
        meta(new)["labels"] = labels

    @override
    def before_delete(self, store: Store, rt: ResourceType, obj: JSON) -> None:
        if name_of(obj) in SYSTEM_NAMESPACES:
            raise forbidden(rt, name_of(obj), "this namespace may not be deleted")
        store.delete_namespace_contents(name_of(obj))


# --- priority classes ---------------------------------------------------------------------------


class PriorityClassStrategy(Strategy):
    """PriorityClasses: default preemption policy, user value cap, protected system classes."""

    @override
    def prepare_for_create(
        self, store: Store, rt: ResourceType, obj: JSON, *, keep_status: bool
    ) -> None:
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        name = name_of(obj)
        value = int(obj.get("value", 0))
        if not name.startswith("system-") and value > HIGHEST_USER_PRIORITY:
            raise invalid(
                rt,
                name,
                [
                    (
                        "FieldValueForbidden",
                        "value",
                        f"Forbidden: maximum allowed value of a user defined priority is "
                        f"{HIGHEST_USER_PRIORITY}",
                    )
                ],
            )

    @override
    def before_delete(self, store: Store, rt: ResourceType, obj: JSON) -> None:
        if name_of(obj) in SYSTEM_PRIORITY_CLASSES:
            raise forbidden(
                rt, name_of(obj), "this is a system priority class and cannot be deleted"
            )


# --- custom resource definitions ----------------------------------------------------------------


class CrdStrategy(Strategy):
    """CRDs: name validation, Established status, (un)registering the served custom types.

    Simplification: deletion removes all custom objects and the CRD at once (the real server
    goes through the customresourcecleanup finalizer).
    """

    @override
    def prepare_for_create(
        self, store: Store, rt: ResourceType, obj: JSON, *, keep_status: bool
    ) -> None:
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
        if name_of(obj) != expected:
            raise invalid(
                rt,
                name_of(obj),
                [
                    (
                        "FieldValueInvalid",
                        "metadata.name",
                        f'Invalid value: "{name_of(obj)}": '
                        'must be spec.names.plural+"."+spec.group',
                    )
                ],
            )
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            raise invalid(
                rt,
                name_of(obj),
                [
                    (
                        "FieldValueNotSupported",
                        "spec.scope",
                        'Unsupported value: supported values: "Cluster", "Namespaced"',
                    )
                ],
            )
        stamp = rfc3339(now())
        accepted = dict(names)
        accepted.setdefault("singular", str(names.get("kind", "")).lower())
        accepted.setdefault("listKind", f"{names.get('kind', '')}List")
        obj["status"] = {
            "acceptedNames": accepted,
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                    "lastTransitionTime": stamp,
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                    "lastTransitionTime": stamp,
                },
            ],
            "storedVersions": [
                v.get("name") for v in spec.get("versions") or [] if v.get("storage")
            ],
        }

    @override
    def before_delete(self, store: Store, rt: ResourceType, obj: JSON) -> None:
        for custom in types_from_crd(obj)[:1]:
            store.delete_all(custom)

    @override
    def after_commit(self, store: Store, rt: ResourceType, event: StoredEvent) -> None:
        spec = event.obj.get("spec") or {}
        group = str(spec.get("group", ""))
        plural = str((spec.get("names") or {}).get("plural", ""))
        store.registry.unregister(group, plural)
        if event.type != "DELETED":
            store.registry.register(types_from_crd(event.obj))


_DEFAULT = Strategy()
_BY_KEY: dict[str, Strategy] = {
    "pods": PodStrategy(),
    "nodes": NodeStrategy(),
    "namespaces": NamespaceStrategy(),
    "priorityclasses.scheduling.k8s.io": PriorityClassStrategy(),
    "customresourcedefinitions.apiextensions.k8s.io": CrdStrategy(),
}


def strategy_for(rt: ResourceType) -> Strategy:
    """The strategy of a resource type (the default one for most)."""
    return _BY_KEY.get(rt.key, _DEFAULT)
