"""The async face of the adapter: each blocking call runs on a dedicated thread pool.

A dedicated pool (not the loop's default executor) keeps API calls from queueing behind
unrelated blocking work, and is large enough that a shutdown phase can delete dozens of
pods concurrently. Watches do not use it: each watch has its own thread (``reflector``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from agent.kube.api import JsonObject, KubeApi
from agent.kube.resources import Resource

T = TypeVar("T")


class AsyncKube:
    def __init__(self, api: KubeApi, *, workers: int = 16) -> None:
        self.api = api
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kube-api")

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

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

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> JsonObject:
        return await self._run(self.api.patch, resource, name, patch, **kwargs)

    async def delete(self, resource: Resource, name: str, **kwargs: Any) -> JsonObject:
        return await self._run(self.api.delete, resource, name, **kwargs)

    async def evict(self, name: str, namespace: str, **kwargs: Any) -> JsonObject:
        return await self._run(self.api.evict, name, namespace, **kwargs)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
