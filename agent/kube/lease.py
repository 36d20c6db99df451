"""One ``coordination.k8s.io/v1`` Lease: the calls made on it, and the leader record it holds.

Why apart from the elector: the election's rules (``agent.kube.leaderelection``) are pure
timing and judging, tested against an in-memory double of ``LeaseApi``; this module is the
seam to the API server, and the record's wire form, which the churn guard's memory
(``agent.kube.evictionmemory``) writes too, with or without an elector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agent.kube.client import AsyncKube
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import LEASES


class LeaseApi(Protocol):
    """The three calls on one Lease the elector makes; errors are ``agent.kube.errors``."""

    name: str

    async def get(self) -> JsonObject:
        """The Lease; ``NotFound`` when it does not exist."""

    async def create(self, lease: JsonObject) -> JsonObject:
        """Create it; ``Conflict`` (AlreadyExists) when someone was first."""

    async def replace(self, lease: JsonObject) -> JsonObject:
        """PUT it; ``Conflict`` when its ``metadata.resourceVersion`` is stale."""


class KubeLeaseApi:
    """``LeaseApi`` for one named Lease, over the adapter's thread pool."""

    def __init__(self, kube: AsyncKube, namespace: str, name: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name

    async def get(self) -> JsonObject:
        return await self.kube.get(LEASES, self.name, self.namespace)

    async def create(self, lease: JsonObject) -> JsonObject:
        return await self.kube.create(LEASES, lease, self.namespace)

    async def replace(self, lease: JsonObject) -> JsonObject:
        return await self.kube.replace(LEASES, lease, self.namespace)


def lease_object(name: str, spec: JsonObject) -> JsonObject:
    """A new Lease named ``name`` with ``spec`` (empty: a Lease nobody holds)."""
    return {
        "apiVersion": LEASES.api_version,
        "kind": LEASES.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass(frozen=True)
class LeaderRecord:
    """client-go's ``LeaderElectionRecord`` as a Lease's spec holds it."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    lease_transitions: int

    @classmethod
    def of(cls, lease: JsonObject) -> LeaderRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def as_spec(self) -> JsonObject:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }
