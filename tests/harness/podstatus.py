"""Builders of pod ``status`` parts (container statuses, conditions) and of times around ``NOW``.

They add to the API JSON of ``deschedulerstate.pod``, so the pod-state plugins' tests go
through the product's own projection, as a watch would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from tests.harness.deschedulerstate import NOW


def ago(seconds: float) -> str:
    """The RFC 3339 time ``seconds`` before the snapshot's ``NOW``."""
    return datetime.fromtimestamp(NOW - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def container(
    restarts: int = 0,
    *,
    waiting: str | None = None,
    terminated: str | None = None,
    exit_code: int | None = None,
) -> dict[str, Any]:
    """A container status; ``terminated=""`` is a terminated state without a reason."""
    state: dict[str, Any] = {"running": {"startedAt": ago(60)}}
    if waiting is not None:
        state = {"waiting": {"reason": waiting, "message": "back-off"}}
    if terminated is not None:
        ended: dict[str, Any] = {"reason": terminated, "finishedAt": ago(30)}
        if exit_code is not None:
            ended["exitCode"] = exit_code
        state = {"terminated": ended}
    return {"name": "c", "image": "app:1", "restartCount": restarts, "ready": False, "state": state}


def condition(
    kind: str, status: str = "True", *, reason: str | None = None, moved: float | None = None
) -> dict[str, Any]:
    """A pod condition; ``moved`` is how many seconds before ``NOW`` it last transitioned."""
    built: dict[str, Any] = {"type": kind, "status": status, "lastProbeTime": None}
    if reason is not None:
        built["reason"] = reason
    if moved is not None:
        built["lastTransitionTime"] = ago(moved)
    return built


def with_status(
    pod: Mapping[str, Any],
    *,
    age: float | None = None,
    reason: str | None = None,
    containers: Iterable[Mapping[str, Any]] = (),
    init_containers: Iterable[Mapping[str, Any]] = (),
    ephemeral_containers: Iterable[Mapping[str, Any]] = (),
    conditions: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The pod with these status parts (and created ``age`` seconds before ``NOW``)."""
    changed = {**pod, "metadata": dict(pod["metadata"]), "status": dict(pod["status"])}
    status = changed["status"]
    if age is not None:
        changed["metadata"]["creationTimestamp"] = ago(age)
    if reason is not None:
        status["reason"] = reason
    for key, value in (
        ("containerStatuses", containers),
        ("initContainerStatuses", init_containers),
        ("ephemeralContainerStatuses", ephemeral_containers),
    ):
        if value:
            status[key] = [dict(each) for each in value]
    if conditions is not None:
        status["conditions"] = [dict(each) for each in conditions]
    return changed
