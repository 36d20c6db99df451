"""The object store: one lock, one global resourceVersion, one event history.

This is the etcd + generic-registry layer of the fake. Every write (from HTTP, from the
in-process API, from the fake kubelet or the controllers) goes through `Store`, so they all get
the same semantics: optimistic concurrency on `metadata.resourceVersion`, status isolation,
`metadata.generation`, graceful deletion and finalizers, and one watch event per write in a
bounded history that watchers replay from. Writers notify a condition variable, so watchers and
waiters block instead of polling.

Resource-specific behaviour (defaulting, admission, cascades) is delegated to a `Strategy`,
looked up per resource type.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..waiting import wait_notified
from .deletion import DeleteOptions, before_delete, check_preconditions
from .objects import (
    canonical,
    deep_copy,
    finalizers_of,
    generate_name,
    is_deleting,
    is_dns_subdomain,
    meta,
    name_of,
    namespace_of,
    new_uid,
    now,
    resource_version_of,
    rfc3339,
)
from .resources import ResourceRegistry, ResourceType
from .status import (
    already_exists,
    bad_request,
    invalid,
    not_found,
    stale_conflict,
)

JSON = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]

_log = logging.getLogger(__name__)

# Metadata the server owns: never taken from an update body.
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


@dataclass(frozen=True)
class StoredEvent:
    """One committed write, as the watch cache records it.

    `obj` is the state after the write (for DELETED: the last state, stamped with the deletion
    resourceVersion); `prev` the state before (None for ADDED).
    """

    rv: int
    type: EventType
    key: str
    obj: JSON
    prev: JSON | None


class Strategy(Protocol):
    """Resource-specific hooks the store calls (see strategies.py)."""

    # Whether a status-subresource write also applies metadata changes (nodes).
    status_writes_metadata: bool

    def default_sections(self, rt: ResourceType, obj: JSON) -> None: ...

    def prepare_for_create(
        self, store: Store, rt: ResourceType, obj: JSON, *, keep_status: bool
    ) -> None: ...

    def prepare_for_update(self, store: Store, rt: ResourceType, new: JSON, old: JSON) -> None: ...

    def graceful_period(self, obj: JSON, requested: int | None) -> int | None: ...

    def before_delete(self, store: Store, rt: ResourceType, obj: JSON) -> None: ...

    def after_commit(self, store: Store, rt: ResourceType, event: StoredEvent) -> None: ...


Hook = Callable[[ResourceType, StoredEvent], None]


class Store:
    """Objects of every resource type, keyed by storage key then (namespace, name)."""

    def __init__(
        self,
        registry: ResourceRegistry,
        strategy_for: Callable[[ResourceType], Strategy],
        *,
        history_limit: int = 1000,
    ) -> None:
        self.registry = registry
        self._strategy_for = strategy_for
        self._lock = threading.RLock()
        self.cond = threading.Condition(self._lock)
        self._rv = 0
        self._objects: dict[str, dict[tuple[str, str], JSON]] = {}
        self._history: deque[StoredEvent] = deque()
        self._history_limit = history_limit
        self._compacted_rv = 0
        self._closed = False
        self._hooks: list[Hook] = []

    # --- locking, waiting, history ------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store lock across several operations (they stay atomic for watchers)."""
        with self._lock:
            yield

    @property
    def resource_version(self) -> int:
        """The latest committed resourceVersion."""
        return self._rv

    @property
    def compacted_rv(self) -> int:
        """Watches from a resourceVersion older than this get 410 Expired."""
        return self._compacted_rv

    @property
    def closed(self) -> bool:
        """True once the server is stopping (watchers and waiters end)."""
        return self._closed

    def close(self) -> None:
        """Wake every waiter so they can observe shutdown."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()

    def add_hook(self, hook: Hook) -> None:
        """Call `hook` (under the lock) after every commit; controllers use this."""
        self._hooks.append(hook)

    def compact(self) -> None:
        """Drop all watch history: any resourceVersion before now becomes too old."""
        with self.cond:
            self._history.clear()
            self._compacted_rv = self._rv
            self.cond.notify_all()

    def events_after(self, cursor: int) -> list[StoredEvent]:
        """Committed events with resourceVersion > cursor, oldest first."""
        with self._lock:
            newer: list[StoredEvent] = []
            for event in reversed(self._history):
                if event.rv <= cursor:
                    break
                newer.append(event)
            newer.reverse()
            return newer

    def wait_for_change(self, cursor: int, timeout: float) -> bool:
        """Block until something newer than `cursor` is committed; False on timeout/close."""
        wait_notified(self.cond, lambda: self._rv > cursor or self._closed, timeout)
        with self.cond:
            return self._rv > cursor

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until `predicate()` (evaluated under the lock after each commit) holds."""
        wait_notified(self.cond, lambda: predicate() or self._closed, timeout)
        with self.cond:
            return predicate()

    def _commit(self, rt: ResourceType, kind: EventType, obj: JSON, prev: JSON | None) -> JSON:
        self._rv += 1
        meta(obj)["resourceVersion"] = str(self._rv)
        bucket = self._objects.setdefault(rt.key, {})
        key = (namespace_of(obj), name_of(obj))
        if kind == "DELETED":
            bucket.pop(key, None)
        else:
            bucket[key] = obj
        event = StoredEvent(self._rv, kind, rt.key, obj, prev)
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._compacted_rv = self._history.popleft().rv
        self.cond.notify_all()
        self._strategy_for(rt).after_commit(self, rt, event)
        for hook in list(self._hooks):
            try:
                hook(rt, event)
            except Exception:  # noqa: BLE001  # a broken controller must not fail the write
                _log.exception("fake apiserver controller hook failed")
        return deep_copy(obj)

    # --- reads --------------------------------------------------------------------------------

    def peek(self, rt: ResourceType, namespace: str, name: str) -> JSON | None:
        """The stored object itself (no copy, caller must not mutate), or None."""
        return self._objects.get(rt.key, {}).get((namespace, name))

    def iter_objects(self, rt: ResourceType, namespace: str | None = None) -> list[JSON]:
        """Stored objects (not copies) in key order, optionally within one namespace."""
        bucket = self._objects.get(rt.key, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        return [bucket[k] for k in keys]

    def get(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        """A copy of one object, or a 404 `ApiError`."""
        with self._lock:
            obj = self.peek(rt, namespace, name)
            if obj is None:
                raise not_found(rt, name)
            return deep_copy(obj)

    def list(
        self, rt: ResourceType, namespace: str | None, accept: Callable[[JSON], bool]
    ) -> tuple[list[JSON], int]:
        """Copies of the matching objects in key order, and the list resourceVersion."""
        with self._lock:
            items = [deep_copy(o) for o in self.iter_objects(rt, namespace) if accept(o)]
            return items, self._rv

    # --- create -------------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, obj: JSON, *, dry_run: bool = False, keep_status: bool = False
    ) -> JSON:
        """Create `obj` (its metadata.namespace must already be resolved by the caller)."""
        obj = deep_copy(obj)
        metadata = meta(obj)
        with self._lock:
            namespace = namespace_of(obj) if rt.namespaced else ""
            if not rt.namespaced:
                metadata.pop("namespace", None)
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = self._unused_name(rt, namespace, str(metadata["generateName"]))
            name = name_of(obj)
            if not name:
                raise invalid(
                    rt,
                    "",
                    [
                        (
                            "FieldValueRequired",
                            "metadata.name",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
            if not is_dns_subdomain(name):
                raise invalid(
                    rt,
                    name,
                    [
                        (
                            "FieldValueInvalid",
                            "metadata.name",
                            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                            "of lower case alphanumeric characters, '-' or '.', and must start "
                            "and end with an alphanumeric character",
                        )
                    ],
                )
            if rt.namespaced:
                self._require_namespace(namespace)
            if self.peek(rt, namespace, name) is not None:
                raise already_exists(rt, name)
            if rt.resets_status_on_create and not keep_status:
                obj.pop("status", None)
            self._strategy_for(rt).default_sections(rt, obj)
            self._strategy_for(rt).prepare_for_create(self, rt, obj, keep_status=keep_status)
            for field in (*_SYSTEM_META, "resourceVersion", "selfLink", "managedFields"):
                metadata.pop(field, None)
            metadata["uid"] = new_uid()
            metadata["creationTimestamp"] = rfc3339(now())
            if rt.tracks_generation:
                metadata["generation"] = 1
            else:
                metadata.pop("generation", None)
            obj["apiVersion"] = rt.api_version
            obj["kind"] = rt.kind
            if dry_run:
                return deep_copy(obj)
            return self._commit(rt, "ADDED", obj, None)

    def _unused_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        for _ in range(20):
            candidate = generate_name(prefix)
            if self.peek(rt, namespace, candidate) is None:
                return candidate
        raise already_exists(rt, prefix)

    def _require_namespace(self, namespace: str) -> None:
        namespaces = self.registry.lookup("", "v1", "namespaces")
        if namespaces is not None and self.peek(namespaces, "", namespace) is None:
            raise not_found(namespaces, namespace)

    # --- update -------------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        obj: JSON,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """PUT semantics: replace the object, 409 on a stale resourceVersion."""
        with self._lock:
            namespace, name = namespace_of(obj) if rt.namespaced else "", name_of(obj)
            current = self.peek(rt, namespace, name)
            if current is None:
                raise not_found(rt, name)
            requested_rv = resource_version_of(obj)
            if requested_rv and requested_rv != resource_version_of(current):
                raise stale_conflict(rt, name)
            if not requested_rv and not rt.allow_unconditional_update:
                raise invalid(
                    rt,
                    name,
                    [
                        (
                            "FieldValueInvalid",
                            "metadata.resourceVersion",
                            "Invalid value: 0x0: must be specified for an update",
                        )
                    ],
                )
            new = self._prepare_update(rt, deep_copy(obj), current, subresource)
            return self._write_update(rt, new, current, dry_run=dry_run)

    def mutate(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        change: Callable[[JSON], JSON],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """Read-modify-write under the lock (PATCH and in-process writers).

        `change` gets a copy of the current object and returns the desired one; a
        metadata.resourceVersion it leaves in place that differs from the stored one is a 409,
        like a patch carrying a stale resourceVersion.
        """
        with self._lock:
            current = self.peek(rt, namespace, name)
            if current is None:
                raise not_found(rt, name)
            desired = change(deep_copy(current))
            if name_of(desired) != name:
                raise bad_request(
                    f"the name of the object ({name_of(desired)}) does not match the name on the "
                    f"URL ({name})"
                )
            if rt.namespaced and namespace_of(desired) != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            requested_rv = resource_version_of(desired)
            if requested_rv and requested_rv != resource_version_of(current):
                raise stale_conflict(rt, name)
            new = self._prepare_update(rt, desired, current, subresource)
            return self._write_update(rt, new, current, dry_run=dry_run)

    def _prepare_update(
        self, rt: ResourceType, new: JSON, current: JSON, subresource: str | None
    ) -> JSON:
        status_with_metadata = (
            subresource == "status" and self._strategy_for(rt).status_writes_metadata
        )
        if status_with_metadata:
            # nodeStatusStrategy: everything but the spec is taken (system metadata below).
            new["spec"] = deep_copy(current.get("spec") or {})
        elif subresource == "status":
            # Status writes take only `.status` (ResetObjectMetaForStatus + strategy).
            result = deep_copy(current)
            if new.get("status") is None:
                result.pop("status", None)
            else:
                result["status"] = new["status"]
            return result
        if subresource == "binding":
            # The scheduler's binding writes spec.nodeName + PodScheduled, bypassing the
            # pod-update validation of the main endpoint.
            result = deep_copy(current)
            result["spec"] = new.get("spec")
            result["status"] = new.get("status")
            return result
        metadata = meta(new)
        current_meta = current["metadata"]
        for field in (*_SYSTEM_META, "namespace", "generation"):
            if field in current_meta:
                metadata[field] = deep_copy(current_meta[field])
            else:
                metadata.pop(field, None)
        metadata.pop("managedFields", None)
        if rt.has_status and not status_with_metadata:
            # The main endpoint ignores status changes when a status subresource exists.
            if "status" in current:
                new["status"] = deep_copy(current["status"])
            else:
                new.pop("status", None)
        new["apiVersion"] = current["apiVersion"]
        new["kind"] = current["kind"]
        _forbid_new_finalizers_while_deleting(rt, new, current)
        self._strategy_for(rt).prepare_for_update(self, rt, new, current)
        if rt.tracks_generation and _spec_changed(rt, new, current):
            metadata["generation"] = int(current_meta.get("generation") or 0) + 1
        return new

    def _write_update(self, rt: ResourceType, new: JSON, current: JSON, *, dry_run: bool) -> JSON:
        meta(new)["resourceVersion"] = resource_version_of(current)
        if canonical(new) == canonical(current):
            # No-op writes are not persisted: no new resourceVersion, no watch event.
            return deep_copy(current)
        if (
            is_deleting(current)
            and not finalizers_of(new)
            and not current["metadata"].get("deletionGracePeriodSeconds")
        ):
            # The last finalizer is gone from an object whose deletion is due: remove it now.
            if dry_run:
                return deep_copy(new)
            self._strategy_for(rt).before_delete(self, rt, new)
            return self._commit(rt, "DELETED", new, deep_copy(current))
        if dry_run:
            return deep_copy(new)
        return self._commit(rt, "MODIFIED", new, deep_copy(current))

    # --- delete -------------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: DeleteOptions | None = None,
    ) -> tuple[JSON, bool]:
        """Delete with the generic registry's semantics; returns (object, removed_now).

        Graceful resources (pods) get deletionTimestamp/deletionGracePeriodSeconds and stay
        until a delete with grace 0 (the kubelet's); objects with finalizers stay, marked as
        deleting, until the last finalizer is removed; everything else is removed at once.
        """
        options = options or DeleteOptions()
        with self._lock:
            current = self.peek(rt, namespace, name)
            if current is None:
                raise not_found(rt, name)
            check_preconditions(rt, current, options)
            strategy = self._strategy_for(rt)
            marked = deep_copy(current)
            mode = before_delete(strategy.graceful_period, marked, options)
            if mode == "pending":
                return deep_copy(current), False
            if mode == "graceful":
                # Persist the deletion mark first (watchers see MODIFIED), as the real store's
                # GuaranteedUpdate does; remove the object right after only if the grace is 0.
                keep = bool(
                    meta(marked).get("deletionGracePeriodSeconds") or finalizers_of(current)
                )
                if options.dry_run:
                    return marked, not keep
                committed = self._commit(rt, "MODIFIED", marked, deep_copy(current))
                if keep:
                    return committed, False
                current = self.peek(rt, namespace, name) or marked
                marked = deep_copy(current)
            elif finalizers_of(current):
                return self._mark_deleting(rt, current, dry_run=options.dry_run), False
            if options.dry_run:
                return marked, True
            strategy.before_delete(self, rt, marked)
            return self._commit(rt, "DELETED", marked, deep_copy(current)), True

    def _mark_deleting(self, rt: ResourceType, current: JSON, *, dry_run: bool) -> JSON:
        """Finalizers keep the object: mark it deleting (grace 0) the first time."""
        if is_deleting(current):
            return deep_copy(current)
        marked = deep_copy(current)
        metadata = meta(marked)
        metadata["deletionTimestamp"] = rfc3339(now())
        metadata["deletionGracePeriodSeconds"] = 0
        if dry_run:
            return marked
        return self._commit(rt, "MODIFIED", marked, deep_copy(current))

    def delete_namespace_contents(self, namespace: str) -> None:
        """Remove every namespaced object in `namespace` at once (namespace controller stand-in)."""
        with self._lock:
            for rt in {t.key: t for t in self.registry.all() if t.namespaced}.values():
                for obj in self.iter_objects(rt, namespace):
                    self._commit(rt, "DELETED", deep_copy(obj), deep_copy(obj))

    def delete_all(self, rt: ResourceType) -> None:
        """Remove every object of a resource (CRD removal stand-in)."""
        with self._lock:
            for obj in self.iter_objects(rt):
                self._commit(rt, "DELETED", deep_copy(obj), deep_copy(obj))


def _forbid_new_finalizers_while_deleting(rt: ResourceType, new: JSON, current: JSON) -> None:
    if not is_deleting(current):
        return
    added = set(finalizers_of(new)) - set(finalizers_of(current))
    if added:
        raise invalid(
            rt,
            name_of(current),
            [
                (
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {sorted(added)}",
                )
            ],
        )


def _spec_changed(rt: ResourceType, new: JSON, old: JSON) -> bool:
    if rt.custom:
        ignored = ("metadata", "status", "apiVersion", "kind")
        return canonical({k: v for k, v in new.items() if k not in ignored}) != canonical(
            {k: v for k, v in old.items() if k not in ignored}
        )
    return canonical(new.get("spec")) != canonical(old.get("spec"))
