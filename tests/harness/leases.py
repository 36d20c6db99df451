"""An in-memory Lease API, for unit tests of the leader elector (time: ``tests.harness.clock``).

The double sits behind the elector's ``LeaseApi`` Protocol (the seam to the API server),
and behaves like the server where the elector depends on it: a global resourceVersion, a
PUT with a stale resourceVersion is 409, a create of an existing Lease is 409
AlreadyExists, a missing one is 404. Faults are per candidate, so one elector can be
stalled or cut off while the other goes on.
"""

from __future__ import annotations

import asyncio
import copy
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from agent.kube.errors import Conflict, KubeError, NotFound

JSON = dict[str, Any]


@dataclass
class Faults:
    """What the next calls of one candidate run into."""

    errors: list[KubeError] = field(default_factory=list)  # raised one per call, in order
    stalled: bool = False  # calls block until ``unstall``
    before_replace: list[Any] = field(default_factory=list)  # callables run before a PUT


class InMemoryLeases:
    """One namespace's Leases; ``api(identity)`` is the handle a candidate uses."""

    def __init__(self) -> None:
        self.objects: dict[str, JSON] = {}
        self.resource_version = 100
        self.calls: dict[str, list[str]] = defaultdict(list)
        self.faults: dict[str, Faults] = defaultdict(Faults)
        self._unstalled = asyncio.Event()

    def api(self, identity: str, name: str = "descheduler") -> LeaseHandle:
        return LeaseHandle(self, identity, name)

    def spec(self, name: str = "descheduler") -> JSON:
        return dict(self.objects[name]["spec"])

    def bump(self, name: str = "descheduler") -> None:
        """Someone else writes the Lease (only its resourceVersion changes)."""
        self.resource_version += 1
        self.objects[name]["metadata"]["resourceVersion"] = str(self.resource_version)

    def take_over(self, holder: str, name: str = "descheduler") -> None:
        """Someone else (``holder``) writes the Lease as its holder."""
        self.objects[name]["spec"]["holderIdentity"] = holder
        self.bump(name)

    def unstall(self, identity: str) -> None:
        self.faults[identity].stalled = False
        self._unstalled.set()

    async def enter(self, identity: str, verb: str) -> None:
        self.calls[identity].append(verb)
        faults = self.faults[identity]
        while faults.stalled:
            self._unstalled.clear()
            await self._unstalled.wait()
        if faults.errors:
            raise faults.errors.pop(0)

    def store(self, lease: JSON) -> JSON:
        self.resource_version += 1
        stored = copy.deepcopy(lease)
        stored["metadata"]["resourceVersion"] = str(self.resource_version)
        self.objects[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)


class LeaseHandle:
    def __init__(self, leases: InMemoryLeases, identity: str, name: str) -> None:
        self.leases = leases
        self.identity = identity
        self.name = name

    async def get(self) -> JSON:
        await self.leases.enter(self.identity, "get")
        if self.name not in self.leases.objects:
            raise NotFound(f"leases {self.name!r} not found", status=404, reason="NotFound")
        return copy.deepcopy(self.leases.objects[self.name])

    async def create(self, lease: JSON) -> JSON:
        await self.leases.enter(self.identity, "create")
        if self.name in self.leases.objects:
            raise Conflict("already exists", status=409, reason="AlreadyExists")
        return self.leases.store(lease)

    async def replace(self, lease: JSON) -> JSON:
        await self.leases.enter(self.identity, "replace")
        for hook in self.leases.faults[self.identity].before_replace:
            hook()
        self.leases.faults[self.identity].before_replace.clear()
        current = self.leases.objects.get(self.name)
        if current is None:
            raise NotFound(f"leases {self.name!r} not found", status=404, reason="NotFound")
        sent = (lease.get("metadata") or {}).get("resourceVersion")
        if sent is not None and sent != current["metadata"]["resourceVersion"]:
            # As on the server: a PUT without a resourceVersion is unconditional.
            raise Conflict("the object has been modified", status=409, reason="Conflict")
        return self.leases.store(lease)


async def settle(rounds: int = 50) -> None:
    """Let every ready task run (the double never blocks unless told to)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
