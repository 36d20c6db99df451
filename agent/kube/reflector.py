"""List+watch one resource into an in-memory store, the way client-go's reflector does.

Concurrency: the blocking list and watch calls run on one dedicated thread per reflector.
That thread never touches the store; it hands every batch to the event loop with
``call_soon_threadsafe``, so the store, its version counter and the listeners are only
ever used from the loop thread and need no lock.

Recovery:
- a watch that ends normally (server timeout) is reopened from the last resourceVersion;
  one that ends within a second having delivered nothing counts as a failure, so a
  misbehaving server cannot drive us into a reconnect storm;
- a broken watch is reopened after a backoff; the server is asked to end each watch
  (``timeoutSeconds``) before the client's read timeout would, as client-go does, so a quiet
  resource's watch ends cleanly instead of in a read timeout, and a dead connection is found
  by TCP keepalive;
- 410 Gone (as an HTTP status or an ``ERROR`` event) forces a relist, as a consistent read;
- a configuration problem (``KubeConfigError``, e.g. an untrusted certificate) is retried
  too, at the capped backoff (the CA file may be fixed under us), but logged as an error
  once per distinct problem instead of as a warning on every retry;
- the first list uses ``resourceVersion=0``, served from the API server's watch cache.

What is stored: ``ProjectingReflector`` keeps, per object, whatever its ``project`` callable
makes of the JSON (a compact, immutable projection: client-go's TransformFunc), optionally
indexed by one value (pods by ``spec.nodeName``); decoding and projection run on the watch
thread, so the loop only swaps references. ``decode_page``/``decode_event`` may replace
``json.loads`` with a decoder that skips the fields the projection never reads; a page
decoder that projects as it decodes (the descheduler's pod list) hands over ``entries``,
``(key, projection)`` pairs or ``Unprojected``, instead of ``items``.
``Reflector`` is the dict case: the raw JSON, or a ``transform`` of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import structlog

from agent.kube.api import KubeApi
from agent.kube.backoff import Backoff, RetryPolicy, retry_after_of
from agent.kube.errors import Gone, KubeConfigError, KubeError
from agent.kube.jsontypes import Decode, JsonObject
from agent.kube.resources import Resource, object_key
from agent.kube.watchstream import UNDECODABLE

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unprojected:
    """An object of a page's ``entries`` that its decoder could not project."""

    key: str
    error: str


Listener = Callable[[str, JsonObject | None], None]
"""Called on the loop with (``ADDED``/``MODIFIED``/``DELETED``/``SYNCED``, object or None)."""


class Pause(Protocol):
    """How the watch thread waits out a backoff: ``seconds``, or less if ``stopping`` is set
    meanwhile. A test passes one that records the delays, instead of sleeping and counting."""

    def __call__(self, stopping: threading.Event, seconds: float, /) -> object: ...


def pause_until_stopped(stopping: threading.Event, seconds: float, /) -> object:
    """The real pause: a ``stop`` cuts it short."""
    return stopping.wait(seconds)


_log = structlog.get_logger(subsystem="kube.reflector")
_SHORT_WATCH = 1.0
"""A watch that ends sooner than this with nothing delivered is treated as a failure."""


class ProjectingReflector(Generic[T]):
    """List+watch one resource, storing ``project(object)`` by ``namespace/name``."""

    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        *,
        name: str,
        project: Callable[[Any], T],
        index: Callable[[T], str] | None = None,
        key: Callable[[Any], str] = object_key,
        decode_page: Decode = json.loads,
        decode_event: Decode = json.loads,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        watch_timeout: float = 300.0,
        read_timeout: float = 90.0,
        backoff: Backoff = Backoff(initial=0.5, cap=30.0),
        pause: Pause = pause_until_stopped,
    ) -> None:
        self.api = api
        self.resource = resource
        self.name = name
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.read_timeout = read_timeout
        self.project = project
        """Applied on the watch thread to every object before it is stored (client-go's
        TransformFunc): a cache keeps a compact projection instead of the raw JSON."""
        self.index = index
        self.key = key
        """``namespace/name`` of a decoded object: ``object_key`` for dicts; a decoder that
        yields its own types (structs) passes theirs."""
        self.decode_page = decode_page
        self.decode_event = decode_event
        self.policy = RetryPolicy(backoff)
        """No attempt cap or deadline: a cache is kept up for as long as the agent runs."""
        self.pause = pause
        self.store: dict[str, T] = {}
        self.indexed: dict[str, dict[str, T]] = {}
        """``index(value)`` -> {key: value}; empty without an index."""
        self.skipped = 0
        """Objects whose projection failed (logged and left out)."""
        self.resource_version = ""
        self.version = 0
        self.last_event_monotonic = 0.0
        self.synced = asyncio.Event()
        self._listeners: list[Callable[[str, Any], None]] = []
        self._stopping = threading.Event()
        self._stream: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._config_problem: str | None = None
        """The configuration problem last logged (watch thread only)."""
        self._last_failure: tuple[int, str] | None = None
        """The failure last logged as a warning, until a list or watch succeeds (watch
        thread only)."""
        self.watching = False
        """Whether a watch response is open and being read: written by the watch thread,
        read by the loop as a hint (see ``live``)."""
        self.last_error: KubeError | None = None
        """The error of the last failed list or watch; ``None`` once a list succeeded.
        Written by the watch thread, read by the loop as a hint only (one reference
        assignment, so a reader sees the old value or the new one, never a torn one)."""

    # -- the loop side --------------------------------------------------------------

    def items(self) -> list[T]:
        return list(self.store.values())

    def get(self, key: str) -> T | None:
        return self.store.get(key)

    @property
    def live(self) -> bool:
        """Synced, with a watch open now: the store lags the server by the watch's latency
        only. Not live (listing, reconnecting after a cut, backing off after an error), the
        store may miss objects created meanwhile until the watch catches up."""
        return self.synced.is_set() and self.watching

    def adopt(self, listing: JsonObject) -> None:
        """Replace the store with a list the caller fetched itself (on the loop).

        For a caller that cannot wait for a broken watch to recover. It is what a relist
        does, so the watch thread needs no telling: when its watch resumes, the events it
        replays from its older resourceVersion end in the same state or a newer one.
        """
        resource_version = str((listing.get("metadata") or {}).get("resourceVersion", ""))
        self._apply("REPLACE", self._project_all(listing), resource_version)

    def by_index(self, value: str) -> list[T]:
        return list(self.indexed.get(value, {}).values())

    def subscribe(self, listener: Callable[[str, Any], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def run(self) -> None:
        """Run until cancelled or ``stop``; the watch thread is stopped on the way out."""
        self._loop = asyncio.get_running_loop()
        self._stopping.clear()
        done: asyncio.Future[None] = self._loop.create_future()

        def finished() -> None:
            if not done.done():
                done.set_result(None)

        thread = threading.Thread(
            target=self._thread_main, args=(finished,), name=f"watch-{self.name}", daemon=True
        )
        thread.start()
        try:
            await asyncio.shield(done)
        finally:
            self.stop()

    def stop(self) -> None:
        """Ask the watch thread to end; safe from any thread."""
        self._stopping.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def _apply(self, kind: str, payload: Any, resource_version: str) -> None:
        self.last_event_monotonic = time.monotonic()
        if kind == "REPLACE":
            self.store = dict(payload)
            self.indexed = self._build_index(self.store) if self.index is not None else {}
            self.resource_version = resource_version
            self.version += 1
            self.synced.set()
            self._notify("SYNCED", None)
            return
        self.resource_version = resource_version or self.resource_version
        if kind == "BOOKMARK":
            return
        key, value = payload
        old = self.store.pop(key, None) if kind == "DELETED" else self.store.get(key)
        if kind != "DELETED":
            self.store[key] = value
        if self.index is not None:
            if old is not None:
                bucket = self.indexed.get(self.index(old))
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del self.indexed[self.index(old)]
            if kind != "DELETED":
                self.indexed.setdefault(self.index(value), {})[key] = value
        self.version += 1
        self._notify(kind, value)

    def _build_index(self, store: dict[str, T]) -> dict[str, dict[str, T]]:
        assert self.index is not None  # noqa: S101 - the caller checked; narrows for mypy
        indexed: dict[str, dict[str, T]] = {}
        for key, value in store.items():
            indexed.setdefault(self.index(value), {})[key] = value
        return indexed

    def _notify(self, kind: str, obj: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, obj)
            except Exception:  # noqa: BLE001 - one broken listener must not starve the others
                _log.exception("listener failed", reflector=self.name, event=kind)

    # -- the thread side ------------------------------------------------------------

    def _post(self, kind: str, payload: Any, resource_version: str) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._apply, kind, payload, resource_version)
        except RuntimeError:  # the loop closed between the check and the call
            self._stopping.set()

    def _thread_main(self, finished: Callable[[], None]) -> None:
        try:
            self._list_and_watch()
        finally:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                # The loop may close under us; then nobody is waiting any more.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(finished)

    def _list_and_watch(self) -> None:
        need_list = True
        list_version = "0"
        resource_version = ""
        failures = 0
        while not self._stopping.is_set():
            try:
                if need_list:
                    listing = self.api.list(
                        self.resource,
                        namespace=self.namespace,
                        label_selector=self.label_selector,
                        field_selector=self.field_selector,
                        resource_version=list_version,
                        decode=self.decode_page,
                    )
                    resource_version = str(
                        (listing.get("metadata") or {}).get("resourceVersion", "")
                    )
                    self._post("REPLACE", self._project_all(listing), resource_version)
                    del listing  # the raw page may be large; only projections stay
                    need_list = False
                    self._config_problem = None
                    self._last_failure = None
                    self.last_error = None
                started = time.monotonic()
                resource_version, delivered = self._watch_once(resource_version)
                if delivered or time.monotonic() - started >= _SHORT_WATCH:
                    failures = 0
                    self._config_problem = None
                    self._last_failure = None
                else:
                    failures += 1
                    self.pause(self._stopping, self.policy.wait(failures))
            except Gone:
                _log.info("watch expired, relisting", reflector=self.name)
                need_list, list_version = True, ""
                failures += 1
                if failures > 1:  # the first relist is at once
                    self.pause(self._stopping, self.policy.wait(failures - 1))
            except KubeError as error:
                self.last_error = error
                failures += 1
                delay = self.policy.wait(failures, retry_after=retry_after_of(error))
                if not self._stopping.is_set():
                    self._log_failure(error, delay)
                self.pause(self._stopping, delay)

    def _log_failure(self, error: KubeError, delay: float) -> None:
        if isinstance(error, KubeConfigError):
            if str(error) != self._config_problem:
                self._config_problem = str(error)
                _log.error(
                    "watch cannot connect: configuration problem; retrying quietly",
                    reflector=self.name,
                    error=str(error),
                )
            return
        # The same failure again and again (a CRD not installed: 404 every retry) is said
        # once, then only at debug level, until something succeeds.
        said = (error.status, str(error))
        log = _log.debug if said == self._last_failure else _log.warning
        self._last_failure = said
        log(
            "watch failed, retrying" if log is _log.warning else "watch still failing",
            reflector=self.name,
            error=str(error),
            status=error.status,
            retry_in=round(delay, 2),
        )

    def _project_all(self, listing: JsonObject) -> list[tuple[str, T]]:
        entries = listing.get("entries")
        if entries is not None:
            return self._take_entries(entries)
        items = listing.get("items") or []
        projected: list[tuple[str, T]] = []
        for obj in items:
            entry = self._projected(obj)
            if entry is not None:
                projected.append(entry)
        return projected

    def _take_entries(self, entries: Iterable[tuple[str, T] | Unprojected]) -> list[tuple[str, T]]:
        projected: list[tuple[str, T]] = []
        for entry in entries:
            if isinstance(entry, Unprojected):
                self._skip(entry.key, entry.error)
            else:
                projected.append(entry)
        return projected

    def _skip(self, key: str, error: str) -> None:
        self.skipped += 1
        _log.warning("object not projected", reflector=self.name, key=key, error=error)

    def _projected(self, obj: Any) -> tuple[str, T] | None:
        key = self.key(obj)
        try:
            return key, self.project(obj)
        except Exception as error:  # noqa: BLE001 - one malformed object must not stop the cache
            self._skip(key, str(error))
            return None

    def _watch_once(self, resource_version: str) -> tuple[str, int]:
        """Follow one watch to its end; return the last resourceVersion and the events seen."""
        # Spread reconnects like client-go does, so many agents do not reconnect in step.
        timeout = max(1, int(self.watch_timeout * (1 + random.random())))  # noqa: S311 - jitter
        stream = self.api.watch(
            self.resource,
            resource_version=resource_version,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            # The server ends a quiet watch (no event, no bookmark) at ``timeout``: the client
            # waits longer than that, so an idle watch ends cleanly, never in a read timeout.
            # A dead peer is found sooner by TCP keepalive (``httpconnections``).
            read_timeout=timeout + self.read_timeout,
            decode=self.decode_event,
        )
        self._stream = stream
        self.watching = True
        delivered = 0
        try:
            if self._stopping.is_set():
                return resource_version, delivered
            for event in stream:
                kind = event.get("type", "")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code") or 0)
                    message = str(obj.get("message") or "watch error")
                    if code == 410:
                        raise Gone(message, status=410, reason=str(obj.get("reason", "")))
                    raise KubeError(message, status=code, reason=str(obj.get("reason", "")))
                resource_version = str(
                    (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                )
                if kind == UNDECODABLE:
                    self._skip("(undecodable watch event)", str(event.get("error")))
                elif kind == "BOOKMARK":
                    self._post(kind, None, resource_version)
                else:
                    entry = self._projected(obj)
                    if entry is not None:
                        self._post(kind, entry, resource_version)
                delivered += 1
                if self._stopping.is_set():
                    break
        finally:
            self.watching = False
            self._stream = None
            stream.close()
        return resource_version, delivered


def _raw(obj: JsonObject) -> JsonObject:
    return obj


class Reflector(ProjectingReflector[JsonObject]):
    """The dict cache: each object's JSON as the API server sent it, or ``transform`` of it."""

    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        *,
        transform: Callable[[JsonObject], JsonObject] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(api, resource, project=transform or _raw, **kwargs)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return super().subscribe(listener)
