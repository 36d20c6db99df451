"""Asking the API server to terminate one pod: a delete, or an eviction that honours PDBs.

Every attempt is bounded by the phase deadline, and retries (429, 5xx, timeouts) stop at
it too, so an API server that hangs or fails can never hold a phase past its end. A call
still blocked in its worker thread when the deadline comes is simply abandoned; the
thread gives up at the client's own request timeout.

Deletes carry a ``uid`` precondition: a StatefulSet pod recreated under the same name (on
another node) is never the one we delete. Evictions have no such guard in our adapter, so
each retry first checks NodeState that the pod we mean is still here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Protocol

from agent.kube.api import JsonObject
from agent.kube.backoff import Backoff, retry_async
from agent.kube.errors import RETRYABLE, Conflict, KubeError, NotFound
from agent.kube.resources import PODS, Resource
from agent.shutdown.phases import PodTarget

RETRY = Backoff(initial=0.1, factor=2.0, cap=2.0)
_UNLIMITED = 1_000_000  # attempts: only the deadline ends the retries
LATE_REQUEST_SECONDS = 5.0
"""How long a termination sent after its phase deadline may keep trying. Such requests are
never waited for (the lock does not wait), so this only bounds the work left behind."""


class PodApi(Protocol):
    async def delete(self, resource: Resource, name: str, **kwargs: Any) -> JsonObject: ...

    async def evict(self, name: str, namespace: str, **kwargs: Any) -> JsonObject: ...


class Outcome(StrEnum):
    REQUESTED = "requested"
    """The delete (or the eviction) was accepted; the kubelet now stops the pod."""
    GONE = "gone"
    """The pod no longer exists (404, or its name now belongs to another pod)."""
    BLOCKED = "blocked"
    """Eviction mode: a PodDisruptionBudget (or the API server) refused until the deadline."""
    FAILED = "failed"
    """No request got through before the deadline."""


class _PodLeft(Exception):
    """The pod left NodeState while we were retrying: nothing left to do."""


async def delete_pod(
    kube: PodApi,
    target: PodTarget,
    *,
    deadline: float,
    monotonic: Callable[[], float],
    backoff: Backoff = RETRY,
) -> Outcome:
    """Delete with the target's grace period until accepted, or until ``deadline``."""

    async def attempt() -> JsonObject:
        async with asyncio.timeout(max(0.0, deadline - monotonic())):
            return await kube.delete(
                PODS,
                target.name,
                namespace=target.namespace,
                grace_period_seconds=target.grace_seconds,
                preconditions={"uid": target.uid} if target.uid else None,
            )

    try:
        await retry_async(
            attempt, backoff=backoff, attempts=_UNLIMITED, deadline=deadline, monotonic=monotonic
        )
    except (NotFound, Conflict):  # Conflict: the uid precondition failed, our pod is gone
        return Outcome.GONE
    except (KubeError, TimeoutError):
        return Outcome.FAILED
    return Outcome.REQUESTED


async def evict_pod(
    kube: PodApi,
    target: PodTarget,
    *,
    deadline: float,
    monotonic: Callable[[], float],
    still_present: Callable[[], bool],
    backoff: Backoff = RETRY,
) -> Outcome:
    """Evict until accepted or ``deadline``; a PDB's 429 is retried, like ``kubectl drain``."""

    async def attempt() -> JsonObject:
        if not still_present():
            raise _PodLeft
        async with asyncio.timeout(max(0.0, deadline - monotonic())):
            return await kube.evict(
                target.name, target.namespace, grace_period_seconds=target.grace_seconds
            )

    try:
        await retry_async(
            attempt, backoff=backoff, attempts=_UNLIMITED, deadline=deadline, monotonic=monotonic
        )
    except (_PodLeft, NotFound):
        return Outcome.GONE
    except (*RETRYABLE, TimeoutError):
        return Outcome.BLOCKED
    except KubeError:  # e.g. 403: evictions not allowed; the caller falls back to a delete
        return Outcome.FAILED
    return Outcome.REQUESTED


async def delete_late(
    kube: PodApi,
    target: PodTarget,
    *,
    monotonic: Callable[[], float],
    seconds: float = LATE_REQUEST_SECONDS,
) -> Outcome:
    """A delete sent once its phase deadline has passed, bounded by its own short deadline.

    kubelet still kills the pods of a phase whose time is up, it just does not wait for
    them; and a PDB honoured up to the deadline does not spare a pod from the shutdown.
    """
    return await delete_pod(kube, target, deadline=monotonic() + seconds, monotonic=monotonic)
