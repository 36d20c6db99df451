"""The async face of the adapter: each blocking call runs on a dedicated thread pool.

A dedicated pool (not the loop's default executor) keeps API calls from queueing behind
unrelated blocking work, and is large enough that a shutdown phase can delete dozens of
pods concurrently. Watches do not use it: each watch has its own thread (``reflector``).

Writes that must end by a deadline (the shutdown's deletes, evictions and status patches)
take ``timeout``: the seconds the caller has left. It bounds the HTTP call itself, not just
the caller's wait, so a call the caller gave up on frees its pool thread by then instead of
at ``kube.requestTimeout``; and the time a call spent queued for a thread counts against it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from agent.kube.api import KubeApi
from agent.kube.errors import Timeout
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import Resource

T = TypeVar("T")


class AsyncKube:
    def __init__(self, api: KubeApi, *, workers: int = 16) -> None:
        self.api = api
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kube-api")

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    async def _run_within(
        self, timeout: float | None, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        """``fn(..., timeout=<what is left>)`` on the pool; the clock starts now, not when a
        thread picks the call up."""
        if timeout is None:
            return await self._run(fn, *args, **kwargs)
        expires = time.monotonic() + timeout

        def bounded() -> T:
            left = expires - time.monotonic()
            if left <= 0:
                raise Timeout(f"{fn.__name__}: no time left when a thread was free")
            return fn(*args, timeout=left, **kwargs)

        return await self._run(bounded)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> JsonObject:
        return await self._run(self.api.get, resource, name, namespace)

    async def list(self, resource: Resource, **kwargs: Any) -> JsonObject:
        return await self._run(self.api.list, resource, **kwargs)

    async def replace(
        self, resource: Resource, obj: JsonObject, namespace: str | None = None
    ) -> JsonObject:
        return await self._run(self.api.replace, resource, obj, namespace)

    async def create(
        self, resource: Resource, obj: JsonObject, namespace: str | None = None
    ) -> JsonObject:
        return await self._run(self.api.create, resource, obj, namespace)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> JsonObject:
        return await self._run_within(timeout, self.api.patch, resource, name, patch, **kwargs)

    async def delete(
        self, resource: Resource, name: str, *, timeout: float | None = None, **kwargs: Any
    ) -> JsonObject:
        return await self._run_within(timeout, self.api.delete, resource, name, **kwargs)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call of the kube layer (``KubeApi``'s) on this pool."""
        return await self._run(fn, *args, **kwargs)

    async def evict(
        self,
        name: str,
        namespace: str,
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        """POST the Eviction."""

        def evict(*, timeout: float | None = None) -> None:
            self.api.evict(name, namespace, timeout=timeout, **kwargs)

        await self._run_within(timeout, evict)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
