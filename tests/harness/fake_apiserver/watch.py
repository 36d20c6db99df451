"""One watcher's view of the store's event history, with the watch cache's semantics.

The HTTP layer only writes what a `WatchSession` yields. The semantics agents depend on are
here: replay from a resourceVersion, synthetic ADDED events for a fresh watch, selector
transitions (an object that stops matching is DELETED for this watcher, one that starts
matching is ADDED), periodic BOOKMARKs, and `410 Expired` for a resourceVersion older than the
retained history, delivered as an `ERROR` event on a 200 response like the real server does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .objects import deep_copy, meta
from .resources import ResourceType
from .selectors import FieldRequirement, LabelSelector, object_filter
from .status import bad_request, expired
from .store import Store, StoredEvent

JSON = dict[str, Any]

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class WatchSpec:
    """The parameters of one watch request."""

    rt: ResourceType
    namespace: str | None
    labels: LabelSelector
    fields: tuple[FieldRequirement, ...]
    resource_version: str | None
    allow_bookmarks: bool = False
    timeout_seconds: float | None = None
    send_initial_events: bool | None = None


def present(obj: JSON, rt: ResourceType) -> JSON:
    """A copy of a stored object as served under `rt` (its apiVersion/kind)."""
    out = deep_copy(obj)
    out["apiVersion"] = rt.api_version
    out["kind"] = rt.kind
    return out


class WatchSession:
    """Produces the events of one watch, in order, until timeout, expiry or shutdown."""

    def __init__(self, store: Store, spec: WatchSpec, bookmark_interval: float) -> None:
        self._store = store
        self._spec = spec
        self._accept = object_filter(spec.namespace, spec.labels, spec.fields)
        self._bookmark_interval = bookmark_interval
        self._cursor = 0
        self._deadline = (
            time.monotonic() + spec.timeout_seconds if spec.timeout_seconds is not None else None
        )
        self._next_bookmark = time.monotonic() + bookmark_interval
        self._timed_out = False
        self.done = False
        rv = spec.resource_version
        self._from_rv: int | None = None
        if rv not in (None, "", "0"):
            try:
                self._from_rv = int(str(rv))
            except ValueError as exc:
                raise bad_request(f'invalid resource version "{rv}"') from exc

    def start(self) -> list[JSON]:
        """The first events: synthetic ADDED for a fresh watch, or the 410 ERROR."""
        spec = self._spec
        if self._from_rv is not None:
            with self._store.locked():
                if self._from_rv < self._store.compacted_rv:
                    self.done = True
                    return [self._expired_event(self._from_rv)]
                self._cursor = self._from_rv
                initial = bool(spec.send_initial_events)
                if initial:
                    items, self._cursor = self._store.list(spec.rt, spec.namespace, self._accept)
        else:
            initial = spec.send_initial_events is not False
            if initial:
                items, self._cursor = self._store.list(spec.rt, spec.namespace, self._accept)
            else:
                self._cursor = self._store.resource_version
        events: list[JSON] = []
        if initial:
            events = [{"type": "ADDED", "object": present(o, spec.rt)} for o in items]
            if spec.send_initial_events and spec.allow_bookmarks:
                events.append(self._bookmark(initial_events_end=True))
        return events

    def poll(self, max_wait: float) -> list[JSON]:
        """Wait up to `max_wait` seconds for events; also emits due bookmarks and expiry."""
        now = time.monotonic()
        wait = max_wait
        if self._deadline is not None:
            wait = min(wait, self._deadline - now)
        if self._spec.allow_bookmarks:
            wait = min(wait, self._next_bookmark - now)
        if wait > 0:
            self._store.wait_for_change(self._cursor, wait)
        with self._store.locked():
            if self._cursor < self._store.compacted_rv:
                # History this watcher had not read yet was dropped (compact() or overflow).
                self.done = True
                return [self._expired_event(self._cursor)]
            stored = self._store.events_after(self._cursor)
            self._cursor = self._store.resource_version
        out = [e for e in (self._transform(s) for s in stored) if e is not None]
        now = time.monotonic()
        if self._deadline is not None and now >= self._deadline:
            self._timed_out = True
            self.done = True
        elif self._store.closed:
            self.done = True
        elif self._spec.allow_bookmarks and now >= self._next_bookmark:
            out.append(self._bookmark())
            self._next_bookmark = now + self._bookmark_interval
        return out

    def finish(self) -> list[JSON]:
        """Events to send before closing: a last BOOKMARK when a timed-out watch allows them."""
        if self._timed_out and self._spec.allow_bookmarks:
            return [self._bookmark()]
        return []

    def _transform(self, event: StoredEvent) -> JSON | None:
        rt = self._spec.rt
        if event.key != rt.key:
            return None
        last_state: JSON | None
        if event.type == "DELETED":
            now_passes, before_passes, last_state = False, self._accept(event.obj), event.obj
        else:
            now_passes = self._accept(event.obj)
            before_passes = event.prev is not None and self._accept(event.prev)
            last_state = event.prev
        if now_passes:
            kind = "MODIFIED" if before_passes else "ADDED"
            return {"type": kind, "object": present(event.obj, rt)}
        if not before_passes or last_state is None:
            return None
        # Deleted, or stopped matching: the watch cache sends DELETED with the last content
        # that matched, stamped with the event's resourceVersion.
        gone = present(last_state, rt)
        meta(gone)["resourceVersion"] = str(event.rv)
        return {"type": "DELETED", "object": gone}

    def _bookmark(self, *, initial_events_end: bool = False) -> JSON:
        metadata: JSON = {"resourceVersion": str(self._cursor)}
        if initial_events_end:
            metadata["annotations"] = {INITIAL_EVENTS_END_ANNOTATION: "true"}
        rt = self._spec.rt
        return {
            "type": "BOOKMARK",
            "object": {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": metadata},
        }

    def _expired_event(self, rv: int) -> JSON:
        error = expired(f"too old resource version: {rv} ({self._store.compacted_rv})")
        return {"type": "ERROR", "object": error.to_status()}
