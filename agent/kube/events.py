"""Posting core/v1 Events, rate-limited and aggregated like client-go's recorder.

Events are best effort: a failure is logged and dropped, never raised into a controller.
Repeats of the same (object, reason, message) inside ``min_interval`` are suppressed; later
repeats bump ``count`` on the existing Event instead of creating a new one. Messages carry
changing detail, so the memory of past Events is bounded (least recently used goes first).

Concurrency: ``emit_now`` is the one implementation and blocks; it runs on a worker thread
of ``AsyncKube``'s pool (``emit`` sends it there). ``EventBroadcaster`` queues Events and posts
them from one worker of its own, so a caller on a hot path (the descheduler's evictions) never
waits for an Event. The memory of past Events is shared by those threads,
so it is read and written under a lock, never held across an HTTP call: two threads racing
on the same Event may both create one, which aggregation only makes less likely anyway.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from agent.clock import SystemClock, sleep_or_set
from agent.kube.client import AsyncKube
from agent.kube.errors import KubeError, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import EVENTS
from agent.kubesemantics.timestamps import rfc3339

_log = structlog.get_logger(subsystem="kube.events")
NODE_EVENT_NAMESPACE = "default"  # kubelet posts Node events in "default"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"

    @classmethod
    def of(cls, obj: JsonObject) -> ObjectRef:
        metadata = obj.get("metadata") or {}
        return cls(
            kind=str(obj.get("kind") or ""),
            name=str(metadata.get("name", "")),
            namespace=str(metadata.get("namespace") or ""),
            uid=str(metadata.get("uid") or ""),
            api_version=str(obj.get("apiVersion") or "v1"),
        )

    @classmethod
    def node(cls, name: str, uid: str = "") -> ObjectRef:
        return cls(kind="Node", name=name, uid=uid or name)

    def as_json(self) -> JsonObject:
        ref: JsonObject = {"kind": self.kind, "name": self.name, "apiVersion": self.api_version}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref


class EventSink(Protocol):
    """What controllers need from ``EventRecorder`` (tests pass simpler doubles)."""

    async def emit(
        self,
        involved: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        *,
        min_interval: float = 0.0,
    ) -> bool: ...


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    last: float = field(default=0.0)


class EventRecorder:
    def __init__(
        self,
        kube: AsyncKube,
        *,
        component: str,
        host: str,
        clock: Callable[[], float] = time.time,
        remembered: int = 512,
    ) -> None:
        self.kube = kube
        self.component = component
        self.host = host
        self.clock = clock
        self.remembered = remembered
        self._seen: OrderedDict[tuple[str, str, str, str, str], _Seen] = OrderedDict()
        self._lock = threading.Lock()

    async def emit(
        self,
        involved: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        *,
        min_interval: float = 0.0,
    ) -> bool:
        """Post (or aggregate) an Event from a worker thread. Returns whether anything was
        sent."""
        return await self.kube.call(
            self.emit_now, involved, event_type, reason, message, min_interval=min_interval
        )

    def emit_now(
        self,
        involved: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        *,
        min_interval: float = 0.0,
    ) -> bool:
        """``emit`` in the calling thread (blocking); never raises a ``KubeError``."""
        api = self.kube.api
        now = self.clock()
        key = (involved.kind, involved.namespace, involved.name, reason, message)
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None:
                self._seen.move_to_end(key)
                if now - seen.last < min_interval:
                    return False
        namespace = involved.namespace or NODE_EVENT_NAMESPACE
        stamp = rfc3339(now)
        try:
            if seen is not None:
                try:
                    api.patch(
                        EVENTS,
                        seen.name,
                        {"count": seen.count + 1, "lastTimestamp": stamp},
                        patch_type="merge",
                        namespace=seen.namespace,
                    )
                    with self._lock:
                        seen.count += 1
                        seen.last = now
                    return True
                except NotFound:
                    pass  # expired (events have a TTL); create a fresh one below
            name = f"{involved.name}.{uuid.uuid4().hex[:16]}"
            api.send(
                "POST",
                EVENTS.path(namespace=namespace),
                body={
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": name, "namespace": namespace},
                    "involvedObject": involved.as_json(),
                    "type": event_type,
                    "reason": reason,
                    "message": message,
                    "source": {"component": self.component, "host": self.host},
                    "reportingComponent": self.component,
                    "reportingInstance": self.host,
                    "firstTimestamp": stamp,
                    "lastTimestamp": stamp,
                    "count": 1,
                },
            )
            with self._lock:
                self._seen[key] = _Seen(name=name, namespace=namespace, count=1, last=now)
                while len(self._seen) > self.remembered:
                    self._seen.popitem(last=False)
            return True
        except KubeError as error:
            _log.warning("event not posted", reason=reason, error=str(error))
            return False


@dataclass(frozen=True)
class _Queued:
    involved: ObjectRef
    event_type: str
    reason: str
    message: str


class EventBroadcaster:
    """Events posted behind the caller's back, like client-go's broadcaster: ``post`` never
    waits. A bounded queue feeds one worker that spends its own token bucket (so Events never
    take the tokens evictions need) and aggregates through ``EventRecorder``; when the queue
    is full, the new Event is dropped and counted, never the caller slowed.

    Concurrency: ``post`` and the worker run on the event loop; the worker sends each Event
    through the recorder's thread pool call, one at a time.
    """

    def __init__(
        self,
        recorder: EventRecorder,
        *,
        acquire: Callable[[], Awaitable[None]],
        capacity: int = 1000,
    ) -> None:
        self.recorder = recorder
        self.acquire = acquire
        """Waits for the Events' own token (``TokenBucket.acquire``)."""
        self.capacity = capacity
        self.dropped = 0
        """Events dropped because the queue was full."""
        self.posted = 0
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue(capacity)
        self._idle = asyncio.Event()
        self._idle.set()

    def post(self, involved: ObjectRef, event_type: str, reason: str, message: str) -> None:
        """Queue an Event; drops it (and counts) when the queue is full."""
        try:
            self._queue.put_nowait(_Queued(involved, event_type, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                _log.warning("event queue full; events dropped", dropped=self.dropped)
            return
        self._idle.clear()

    async def emit(
        self,
        involved: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        *,
        min_interval: float = 0.0,  # noqa: ARG002 - EventSink's signature; aggregation applies
    ) -> bool:
        """``EventSink``: queue the Event and return at once."""
        self.post(involved, event_type, reason, message)
        return True

    async def run(self) -> None:
        """The worker: post queued Events, each after its token, until cancelled."""
        while True:
            item = await self._queue.get()
            try:
                await self.acquire()
                if await self.recorder.emit(
                    item.involved, item.event_type, item.reason, item.message
                ):
                    self.posted += 1
            except Exception:  # noqa: BLE001 - Events are best effort; the worker goes on
                _log.exception("event not posted", reason=item.reason)
            finally:
                self._queue.task_done()
                if self._queue.empty():
                    self._idle.set()

    async def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until every queued Event was posted; ``True``
        when the queue emptied (a one-shot run's last Events are not lost to its exit)."""
        return await sleep_or_set(SystemClock(), timeout, self._idle)
