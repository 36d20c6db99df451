"""List+watch one resource into an in-memory store, the way client-go's reflector does.

Concurrency: the blocking list and watch calls run on one dedicated thread per reflector.
That thread never touches the store; it hands every batch to the event loop with
``call_soon_threadsafe``, so the store, its version counter and the listeners are only
ever used from the loop thread and need no lock.

Recovery:
- a watch that ends normally (server timeout) is reopened from the last resourceVersion;
  one that ends within a second having delivered nothing counts as a failure, so a
  misbehaving server cannot drive us into a reconnect storm;
- a broken or silent watch (client read timeout) is reopened after a backoff;
- 410 Gone (as an HTTP status or an ``ERROR`` event) forces a relist, as a consistent read;
- a configuration problem (``KubeConfigError``, e.g. an untrusted certificate) is retried
  too, at the capped backoff (the CA file may be fixed under us), but logged as an error
  once per distinct problem instead of as a warning on every retry;
- the first list uses ``resourceVersion=0``, served from the API server's watch cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

from agent.kube.api import JsonObject, KubeApi
from agent.kube.backoff import Backoff, RetryPolicy, retry_after_of
from agent.kube.errors import Gone, KubeConfigError, KubeError
from agent.kube.resources import Resource, object_key

Listener = Callable[[str, JsonObject | None], None]
"""Called on the loop with (``ADDED``/``MODIFIED``/``DELETED``/``SYNCED``, object or None)."""

_log = structlog.get_logger(subsystem="kube.reflector")
_SHORT_WATCH = 1.0
"""A watch that ends sooner than this with nothing delivered is treated as a failure."""


class Reflector:
    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        *,
        name: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        watch_timeout: float = 300.0,
        read_timeout: float = 90.0,
        backoff: Backoff = Backoff(initial=0.5, cap=30.0),
        transform: Callable[[JsonObject], JsonObject] | None = None,
    ) -> None:
        self.api = api
        self.resource = resource
        self.name = name
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.read_timeout = read_timeout
        self.transform = transform
        """Applied on the watch thread to every object before it is stored (client-go's
        TransformFunc): a cache can keep a compact projection instead of the raw JSON."""
        self.policy = RetryPolicy(backoff)
        """No attempt cap or deadline: a cache is kept up for as long as the agent runs."""
        self.store: dict[str, JsonObject] = {}
        self.resource_version = ""
        self.version = 0
        self.last_event_monotonic = 0.0
        self.synced = asyncio.Event()
        self._listeners: list[Listener] = []
        self._stopping = threading.Event()
        self._stream: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._config_problem: str | None = None
        """The configuration problem last logged (watch thread only)."""

    # -- the loop side --------------------------------------------------------------

    def items(self) -> list[JsonObject]:
        return list(self.store.values())

    def get(self, key: str) -> JsonObject | None:
        return self.store.get(key)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
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
            self.store = {object_key(obj): obj for obj in payload}
            self.resource_version = resource_version
            self.version += 1
            self.synced.set()
            self._notify("SYNCED", None)
            return
        self.resource_version = resource_version or self.resource_version
        if kind == "BOOKMARK":
            return
        key = object_key(payload)
        if kind == "DELETED":
            self.store.pop(key, None)
        else:
            self.store[key] = payload
        self.version += 1
        self._notify(kind, payload)

    def _notify(self, kind: str, obj: JsonObject | None) -> None:
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
        if self.transform is not None and kind != "BOOKMARK":
            transform = self.transform
            payload = [transform(o) for o in payload] if kind == "REPLACE" else transform(payload)
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
                    )
                    resource_version = str(
                        (listing.get("metadata") or {}).get("resourceVersion", "")
                    )
                    self._post("REPLACE", listing.get("items") or [], resource_version)
                    need_list = False
                    self._config_problem = None
                started = time.monotonic()
                resource_version, delivered = self._watch_once(resource_version)
                if delivered or time.monotonic() - started >= _SHORT_WATCH:
                    failures = 0
                    self._config_problem = None
                else:
                    failures += 1
                    self._stopping.wait(self.policy.wait(failures))
            except Gone:
                _log.info("watch expired, relisting", reflector=self.name)
                need_list, list_version = True, ""
                failures += 1
                if failures > 1:  # the first relist is at once
                    self._stopping.wait(self.policy.wait(failures - 1))
            except KubeError as error:
                failures += 1
                delay = self.policy.wait(failures, retry_after=retry_after_of(error))
                if not self._stopping.is_set():
                    self._log_failure(error, delay)
                self._stopping.wait(delay)

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
        _log.warning(
            "watch failed, retrying",
            reflector=self.name,
            error=str(error),
            status=error.status,
            retry_in=round(delay, 2),
        )

    def _watch_once(self, resource_version: str) -> tuple[str, int]:
        """Follow one watch to its end; return the last resourceVersion and the events seen."""
        # Spread reconnects like client-go does, so many agents do not reconnect in step.
        timeout = int(self.watch_timeout * (1 + random.random()))  # noqa: S311 - jitter
        stream = self.api.watch(
            self.resource,
            resource_version=resource_version,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=max(1, timeout),
            read_timeout=self.read_timeout,
        )
        self._stream = stream
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
                self._post(kind, obj, resource_version)
                delivered += 1
                if self._stopping.is_set():
                    break
        finally:
            self._stream = None
            stream.close()
        return resource_version, delivered
