"""Asking the API server to terminate one pod: a delete, or an eviction that honours PDBs.

Every attempt is bounded by the phase deadline, and retries (429, 5xx, timeouts) stop at
it too, so an API server that hangs or fails can never hold a phase past its end. The
HTTP call itself gets the time left as its request timeout, so a call that hangs frees its
worker thread at the deadline too: the next phase's calls never queue behind it.

A pod we delete first gets kubelet's ``DisruptionTarget`` condition (reason
``TerminationByKubelet``), so a Job's ``podFailurePolicy`` sees a disruption, not a
failure; an accepted eviction adds its own. The condition is a status patch sent
alongside the delete: the delete waits for it ``MARK_HEAD_START`` at most (so it usually
lands first), and its failure is logged, never fatal.

Deletes carry a ``uid`` precondition: a StatefulSet pod recreated under the same name (on
another node) is never the one we delete. Evictions have no such guard in our adapter, so
each retry first checks NodeState that the pod we mean is still here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from enum import StrEnum
from typing import Any, Protocol

import structlog

from agent.clock import SystemClock, sleep_or_done
from agent.kube.backoff import Backoff, retry_async
from agent.kube.errors import RETRYABLE, Conflict, KubeError, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import PODS, Resource
from agent.kubesemantics.timestamps import rfc3339
from agent.kubesemantics.wellknown import DISRUPTION_TARGET
from agent.shutdown.phases import PodTarget

_log = structlog.get_logger(subsystem="shutdown.run")

RETRY = Backoff(initial=0.1, factor=2.0, cap=2.0)
_UNLIMITED = 1_000_000  # attempts: only the deadline ends the retries
LATE_REQUEST_SECONDS = 5.0
"""How long a termination sent after its phase deadline may keep trying. Such requests are
never waited for (the lock does not wait), so this only bounds the work left behind."""
MARK_HEAD_START = 0.05
"""How long a delete waits for the DisruptionTarget condition to be written first: on a
loopback API server the patch answers in 10 to 30 ms, and every millisecond waited here is
one more before the container's SIGTERM (kubelet's own shutdown signals at once). The
condition is kept if it lands after the delete: the pod stays until kubelet ends it, and
kubelet keeps conditions it does not own."""
MARK_ATTEMPTS = 3
DISRUPTION_REASON = "TerminationByKubelet"
DISRUPTION_MESSAGE = "Pod was terminated in response to imminent node shutdown."


class PodApi(Protocol):
    async def delete(self, resource: Resource, name: str, **kwargs: Any) -> JsonObject: ...

    async def evict(self, name: str, namespace: str, **kwargs: Any) -> None: ...

    async def patch(
        self, resource: Resource, name: str, patch: Any, **kwargs: Any
    ) -> JsonObject: ...


Spawn = Callable[[Coroutine[object, object, object]], asyncio.Task[object]]
"""Runs a coroutine as a task its owner keeps (and cancels when it is done with it)."""


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
        left = _time_left(deadline, monotonic)
        async with asyncio.timeout(left):
            return await kube.delete(
                PODS,
                target.name,
                namespace=target.namespace,
                grace_period_seconds=target.grace_seconds,
                preconditions={"uid": target.uid} if target.uid else None,
                timeout=left,
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

    async def attempt() -> None:
        if not still_present():
            raise _PodLeft
        left = _time_left(deadline, monotonic)
        async with asyncio.timeout(left):
            await kube.evict(
                target.name,
                target.namespace,
                grace_period_seconds=target.grace_seconds,
                timeout=left,
            )

    try:
        await retry_async(
            attempt, backoff=backoff, attempts=_UNLIMITED, deadline=deadline, monotonic=monotonic
        )
    except _PodLeft:
        return Outcome.GONE
    except (*RETRYABLE, TimeoutError):
        return Outcome.BLOCKED
    except KubeError:
        # Refused for good: 403 (evictions not allowed), or 404, which may be the eviction
        # subresource itself missing rather than the pod; the caller deletes instead, and
        # the delete's own answer tells whether the pod was gone.
        return Outcome.FAILED
    return Outcome.REQUESTED


def disruption_patch(target: PodTarget, now: float) -> JsonObject:
    """The strategic-merge status patch that adds kubelet's node-shutdown condition.

    Conditions merge by ``type``, so no other condition is touched. ``metadata.uid`` makes
    it a precondition, as kubelet's own status patches do: a pod recreated under the same
    name is never marked.
    """
    patch: JsonObject = {
        "status": {
            "conditions": [
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": DISRUPTION_REASON,
                    "message": DISRUPTION_MESSAGE,
                    "lastTransitionTime": rfc3339(now),
                }
            ]
        }
    }
    if target.uid:
        patch["metadata"] = {"uid": target.uid}
    return patch


async def mark_disruption(
    kube: PodApi,
    target: PodTarget,
    *,
    deadline: float,
    monotonic: Callable[[], float],
    now: Callable[[], float],
    backoff: Backoff = RETRY,
) -> bool:
    """Add the ``DisruptionTarget`` condition; a failure is logged and reported, not raised."""

    async def attempt() -> JsonObject:
        left = _time_left(deadline, monotonic)
        async with asyncio.timeout(left):
            return await kube.patch(
                PODS,
                target.name,
                disruption_patch(target, now()),
                patch_type="strategic",
                namespace=target.namespace,
                subresource="status",
                timeout=left,
            )

    try:
        await retry_async(
            attempt,
            backoff=backoff,
            attempts=MARK_ATTEMPTS,
            deadline=deadline,
            monotonic=monotonic,
        )
    except (NotFound, Conflict):  # gone, or its name belongs to another pod now
        return False
    except (KubeError, TimeoutError) as error:
        _log.warning(
            "could not mark the pod as disrupted by the shutdown; deleting it anyway",
            pod=target.key,
            error=str(error) or type(error).__name__,
        )
        return False
    return True


async def mark_then_delete(
    kube: PodApi,
    target: PodTarget,
    *,
    deadline: float,
    monotonic: Callable[[], float],
    now: Callable[[], float],
    spawn: Spawn,
    head_start: float = MARK_HEAD_START,
    backoff: Backoff = RETRY,
) -> Outcome:
    """Mark the pod (in a task of ``spawn``'s), give that a short head start, then delete.

    The mark runs on by itself, bounded by ``deadline``: the delete never waits for it
    beyond ``head_start``, whatever the API server does with the patch.
    """
    marking = spawn(
        mark_disruption(
            kube, target, deadline=deadline, monotonic=monotonic, now=now, backoff=backoff
        )
    )
    head_start = min(head_start, deadline - monotonic())
    if head_start > 0:
        # The mark is only watched: the race never cancels a task it was handed. Real
        # time, as before (``monotonic`` only measures the deadline).
        await sleep_or_done(SystemClock(), head_start, marking)
    return await delete_pod(kube, target, deadline=deadline, monotonic=monotonic, backoff=backoff)


async def delete_late(
    kube: PodApi,
    target: PodTarget,
    *,
    monotonic: Callable[[], float],
    now: Callable[[], float],
    spawn: Spawn,
    seconds: float = LATE_REQUEST_SECONDS,
) -> Outcome:
    """A delete sent once its phase deadline has passed, bounded by its own short deadline.

    kubelet still kills the pods of a phase whose time is up, it just does not wait for
    them; and a pod whose eviction did not go through (a PDB honoured up to the deadline,
    a refusal, no answer) does not escape the shutdown. The delete goes out at once, with
    the mark beside it rather than before it: at the budget's end the lock is released
    right after, and the delete is the request that must reach the API server first.
    """
    return await mark_then_delete(
        kube,
        target,
        deadline=monotonic() + seconds,
        monotonic=monotonic,
        now=now,
        spawn=spawn,
        head_start=0.0,
    )


def _time_left(deadline: float, monotonic: Callable[[], float]) -> float:
    """Seconds until ``deadline``; none left is a timeout, without a request being sent."""
    left = deadline - monotonic()
    if left <= 0:
        raise TimeoutError
    return left
