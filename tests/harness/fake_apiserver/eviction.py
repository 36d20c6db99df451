"""PodDisruptionBudgets: the eviction subresource and a disruption-controller stand-in.

Drains are the riskiest thing a node agent does, so the fake answers evictions like
`pkg/registry/core/pod/storage/eviction.go`: terminal, pending and terminating pods skip the
budget; more than one matching PDB is a 500; a budget without disruptions left is a 429 with a
`DisruptionBudget` cause; unready pods follow `unhealthyPodEvictionPolicy`; an allowed eviction
adds the `DisruptionTarget` condition and deletes the pod with the eviction's delete options.

Simplifications (documented in the README):
- the budget is computed from live pods at eviction time (the real handler reads the PDB
  status the disruption controller last wrote); the controller below keeps that status in sync
  synchronously, so both agree;
- `expectedPods` is the number of pods matching the selector, also for percentages and
  `maxUnavailable` (the real controller uses the owning controllers' scale); percentages round up
  as in the real controller;
- `status.disruptedPods` is not maintained (an evicted pod is already terminating, hence
  unhealthy, by the time anyone reads the status).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from .deletion import DeleteOptions
from .objects import canonical, is_deleting, labels_of, name_of, namespace_of, now, rfc3339
from .resources import ResourceType
from .selectors import NOTHING, LabelSelector, from_label_selector_object
from .status import ApiError, bad_request, not_found, success_status, too_many_requests
from .store import Store, StoredEvent

JSON = dict[str, Any]

MULTIPLE_PDBS_MESSAGE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
VIOLATION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
EVICTION_API_VERSIONS = ("policy/v1", "policy/v1beta1")


def is_pod_ready(pod: JSON) -> bool:
    """`podutil.IsPodReady`: the Ready condition is True."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def pdb_selector(pdb: JSON) -> LabelSelector:
    """The PDB's selector; invalid selectors match nothing (as in the eviction handler)."""
    try:
        return from_label_selector_object((pdb.get("spec") or {}).get("selector"))
    except ValueError:
        return NOTHING


def scaled_value(value: Any, total: int) -> int:
    """`intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)`."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)


def disruption_status(pdb: JSON, pods: list[JSON], previous: JSON | None = None) -> JSON:
    """The status the disruption controller computes for `pdb` over the namespace's pods."""
    selector = pdb_selector(pdb)
    matching = [p for p in pods if selector.matches(labels_of(p))]
    expected = len(matching)
    healthy = sum(1 for p in matching if not is_deleting(p) and is_pod_ready(p))
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected))
    elif spec.get("minAvailable") is not None:
        desired = scaled_value(spec["minAvailable"], expected)
    else:
        desired = 0
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    generation = int((pdb.get("metadata") or {}).get("generation") or 0)
    condition: JSON = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed > 0 else "False",
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
        "observedGeneration": generation,
        "lastTransitionTime": rfc3339(now()),
    }
    for old in (previous or {}).get("conditions") or []:
        if old.get("type") == "DisruptionAllowed" and old.get("status") == condition["status"]:
            condition["lastTransitionTime"] = old.get("lastTransitionTime")
    return {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [condition],
    }


def _can_ignore_pdb(pod: JSON) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or is_deleting(pod)


def _should_enforce_resource_version(pod: JSON) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not is_deleting(pod)


def _set_condition(pod: JSON, condition: JSON) -> JSON:
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    conditions.append(condition)
    status["conditions"] = conditions
    return pod


class Evictions:
    """The `pods/eviction` subresource and the PDB status controller, over one store."""

    def __init__(self, store: Store, *, controller: bool = True) -> None:
        self._store = store
        self._deferred: set[str] | None = None
        """Namespaces to recompute when a bulk seed ends; ``None`` outside one."""
        if controller:
            store.add_hook(self._on_commit)

    def _types(self) -> tuple[ResourceType, ResourceType]:
        pods = self._store.registry.lookup("", "v1", "pods")
        pdbs = self._store.registry.lookup("policy", "v1", "poddisruptionbudgets")
        if pods is None or pdbs is None:  # pragma: no cover - built in
            raise RuntimeError("pods and poddisruptionbudgets must be registered")
        return pods, pdbs

    def matching_pdbs(self, pod: JSON) -> list[JSON]:
        """PDBs in the pod's namespace whose selector matches the pod's labels."""
        _, pdb_rt = self._types()
        return [
            pdb
            for pdb in self._store.iter_objects(pdb_rt, namespace_of(pod))
            if pdb_selector(pdb).matches(labels_of(pod))
        ]

    def evict(self, namespace: str, name: str, body: JSON, *, dry_run: bool = False) -> JSON:
        """Handle `POST pods/<name>/eviction`; returns the success `Status` (201)."""
        self._validate(namespace, name, body)
        options = DeleteOptions.from_body(body.get("deleteOptions"), None, dry_run)
        pod_rt, _ = self._types()
        with self._store.locked():
            pod = self._store.peek(pod_rt, namespace, name)
            if pod is None:
                raise not_found(pod_rt, name)
            if _can_ignore_pdb(pod):
                if (
                    _should_enforce_resource_version(pod)
                    and options.precondition_resource_version is None
                ):
                    rv = str(pod["metadata"].get("resourceVersion"))
                    options = replace(options, precondition_resource_version=rv)
                self._store.delete(pod_rt, namespace, name, options)
                return success_status(201)
            pdbs = self.matching_pdbs(pod)
            if len(pdbs) > 1:
                # The real handler returns a bare Status{Failure, code 500} without a reason.
                raise ApiError(500, "InternalError", MULTIPLE_PDBS_MESSAGE)
            if pdbs:
                self._check_budget(pdbs[0], pod)
            if options.dry_run:
                return success_status(201)
            self._store.mutate(
                pod_rt,
                namespace,
                name,
                lambda p: _set_condition(
                    p,
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "EvictionByEvictionAPI",
                        "message": "Eviction API: evicting",
                        "lastTransitionTime": rfc3339(now()),
                    },
                ),
                subresource="status",
            )
            self._store.delete(pod_rt, namespace, name, options)
            return success_status(201)

    @staticmethod
    def _validate(namespace: str, name: str, body: JSON) -> None:
        api_version = body.get("apiVersion")
        if api_version is not None and api_version not in EVICTION_API_VERSIONS:
            raise bad_request(
                f"the API version in the data ({api_version}) is not an Eviction version"
            )
        if body.get("kind") not in (None, "Eviction"):
            raise bad_request(f"not a Eviction object: {body.get('kind')}")
        metadata = body.get("metadata") or {}
        if metadata.get("name") != name:
            raise bad_request("name in URL does not match name in Eviction object")
        if metadata.get("namespace") not in (None, "", namespace):
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )

    def _check_budget(self, pdb: JSON, pod: JSON) -> None:
        pod_rt, _ = self._types()
        status = disruption_status(pdb, self._store.iter_objects(pod_rt, namespace_of(pod)))
        if not is_pod_ready(pod):
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
            if policy == "AlwaysAllow":
                return
            if status["currentHealthy"] >= status["desiredHealthy"] > 0:
                return
        if status["disruptionsAllowed"] <= 0:
            raise too_many_requests(
                VIOLATION_MESSAGE,
                [
                    {
                        "reason": "DisruptionBudget",
                        "message": (
                            f"The disruption budget {name_of(pdb)} needs "
                            f"{status['desiredHealthy']} healthy pods and has "
                            f"{status['currentHealthy']} currently"
                        ),
                    }
                ],
            )

    def _on_commit(self, rt: ResourceType, event: StoredEvent) -> None:
        """Recompute the status of the PDBs in a namespace whose pods or PDBs changed."""
        pod_rt, pdb_rt = self._types()
        if rt.key not in (pod_rt.key, pdb_rt.key):
            return
        namespace = namespace_of(event.obj)
        if self._deferred is not None:
            self._deferred.add(namespace)
            return
        self._recompute(namespace)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Recompute the touched namespaces' PDB statuses once, when the block ends.

        Each pod or PDB write otherwise recomputes every PDB of its namespace over all its
        pods (and lists them sorted): seeding n pods that way is quadratic, and 31k objects
        took more than 15 minutes. The final statuses are the same, as they depend only on
        the pods and PDBs present. The caller holds the store lock for the whole block, so no
        one sees the statuses in between.
        """
        self._deferred = set()
        try:
            yield
        finally:
            touched = self._deferred
            # The flush's own status writes are PDB commits too; they change no input of
            # any status, so they are not followed up (recursing on each one made the flush
            # itself quadratic in the PDBs of a namespace).
            self._deferred = set()
            try:
                for namespace in sorted(touched):
                    self._recompute(namespace)
            finally:
                self._deferred = None

    def _recompute(self, namespace: str) -> None:
        pod_rt, pdb_rt = self._types()
        budgets = self._store.iter_objects(pdb_rt, namespace)
        if not budgets:
            return  # every pod write lands here: do not list the namespace's pods for nothing
        pods = self._store.iter_objects(pod_rt, namespace)
        for pdb in budgets:
            if is_deleting(pdb):
                continue
            old = pdb.get("status") or {}
            new = disruption_status(pdb, pods, old)
            if canonical(new) == canonical(old):
                continue

            def write(obj: JSON, status: JSON = new) -> JSON:
                obj["status"] = status
                return obj

            self._store.mutate(pdb_rt, namespace, name_of(pdb), write, subresource="status")
