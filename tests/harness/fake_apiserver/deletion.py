"""Delete rules: DeleteOptions, preconditions, and graceful deletion (`rest.BeforeDelete`).

Graceful deletion is where a node agent and the API server interact most subtly (drains,
shutdown): who sets deletionTimestamp, what a second DELETE may change, when the object really
goes. These rules are kept apart from the store so they can be read against the real
`k8s.io/apiserver/pkg/registry/rest/delete.go` in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .objects import epoch_of, from_epoch, is_deleting, meta, name_of, resource_version_of, rfc3339
from .resources import ResourceType
from .status import conflict

JSON = dict[str, Any]
GracePolicy = Callable[[JSON, int | None], int | None]


@dataclass(frozen=True)
class DeleteOptions:
    """The parts of `metav1.DeleteOptions` the fake honours."""

    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None
    dry_run: bool = False

    @classmethod
    def from_body(cls, body: JSON | None, query_grace: int | None, dry_run: bool) -> DeleteOptions:
        """Merge a DeleteOptions body with the `gracePeriodSeconds` query parameter."""
        body = body or {}
        preconditions = body.get("preconditions") or {}
        grace = body.get("gracePeriodSeconds")
        if grace is None:
            grace = query_grace
        return cls(
            grace_period_seconds=None if grace is None else int(grace),
            precondition_uid=preconditions.get("uid"),
            precondition_resource_version=preconditions.get("resourceVersion"),
            dry_run=dry_run or bool(body.get("dryRun")),
        )


def check_preconditions(rt: ResourceType, current: JSON, options: DeleteOptions) -> None:
    """DeleteOptions.preconditions: a uid or resourceVersion mismatch is a 409."""
    name = name_of(current)
    uid = str(current["metadata"].get("uid", ""))
    if options.precondition_uid is not None and options.precondition_uid != uid:
        raise conflict(
            rt,
            name,
            f"Precondition failed: UID in precondition: {options.precondition_uid}, UID in "
            f"object meta: {uid}",
        )
    rv = resource_version_of(current)
    wanted_rv = options.precondition_resource_version
    if wanted_rv is not None and wanted_rv != rv:
        raise conflict(
            rt,
            name,
            f"Precondition failed: ResourceVersion in precondition: {wanted_rv}, "
            f"ResourceVersion in object meta: {rv}",
        )


DeleteMode = Literal["now", "graceful", "pending"]


def before_delete(graceful_period: GracePolicy, obj: JSON, options: DeleteOptions) -> DeleteMode:
    """`rest.BeforeDelete`: how a delete proceeds; sets obj's deletion metadata if graceful.

    `graceful_period` is the resource's policy (pods: `CheckGracefulDelete`): the grace a
    delete gets, or None when the resource is deleted at once.
    """
    metadata = meta(obj)
    requested = options.grace_period_seconds
    if requested is not None and requested < 0:
        requested = 1
    if is_deleting(obj):
        return _shorten_grace(metadata, requested)
    period = graceful_period(obj, requested)
    if period is None:
        return "now"
    metadata["deletionTimestamp"] = rfc3339(from_epoch(time.time() + period))
    metadata["deletionGracePeriodSeconds"] = period
    if int(metadata.get("generation") or 0) > 0:
        metadata["generation"] = int(metadata["generation"]) + 1
    return "graceful"


def _shorten_grace(metadata: JSON, requested: int | None) -> DeleteMode:
    """A delete of an object already being deleted may only shorten its grace period."""
    current_grace = metadata.get("deletionGracePeriodSeconds")
    if not current_grace:
        return "now"
    if requested is None or requested >= int(current_grace):
        return "pending"
    deadline = epoch_of(metadata["deletionTimestamp"]) - int(current_grace) + requested
    metadata["deletionTimestamp"] = rfc3339(from_epoch(deadline))
    metadata["deletionGracePeriodSeconds"] = requested
    return "graceful"
