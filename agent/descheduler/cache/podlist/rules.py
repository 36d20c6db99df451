"""The exact rules of ``projection``, applied to the parts of a decoded pod list item.

``projector`` calls these on a memo miss (and for the rare pod that needs them, such as one
bound to no node). Each gives what ``projection.project_pod`` gives for the same bytes: on
the dicts ``wire`` would make of them, or written out where that is plainly the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from sys import intern
from typing import Any

import msgspec

from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist.item import (
    ItemCondition,
    ItemContainer,
    ItemContainerStatus,
    ItemSpec,
    ItemVolume,
    LeanItemStatus,
)
from agent.descheduler.cache.wire import OwnerReference
from agent.descheduler.model.cluster import OwnerRef
from agent.descheduler.model.keys import KEPT_ANNOTATIONS, UNSCHEDULABLE_SINCE
from agent.descheduler.model.podstatus import (
    ContainerStatusInfo,
    PodConditionInfo,
    PodStatusInfo,
    container_status,
)
from agent.descheduler.model.values import EMPTY_MAP
from agent.kubesemantics.pods import API_SOURCE, MIRROR_ANNOTATION, SOURCE_ANNOTATION
from agent.kubesemantics.qos import pod_qos
from agent.kubesemantics.wellknown import READY

_OWNERS = msgspec.json.Decoder(list[OwnerReference] | None)


def decode_any(raw: bytes) -> Any:
    return msgspec.json.decode(raw)


def decode_shaped(raw: bytes, shape: Any, path: str) -> Any:
    """A part kept raw, decoded and checked against the API server's shape for it."""
    return projection.shaped(msgspec.json.decode(raw), shape, path)


NO_ANNOTATIONS: tuple[Mapping[str, str], bool, bool] = (EMPTY_MAP, False, False)
NO_VOLUMES: tuple[bool, tuple[str, ...]] = (False, ())


def annotation_facts(annotations: Mapping[str, str]) -> tuple[Mapping[str, str], bool, bool]:
    """The annotations a rule reads, and whether the pod is a mirror or a static pod."""
    kept = {key: annotations[key] for key in KEPT_ANNOTATIONS if key in annotations}
    mirror = MIRROR_ANNOTATION in annotations
    static = annotations.get(SOURCE_ANNOTATION, API_SOURCE) != API_SOURCE
    return kept, mirror, static


def first_ready(conditions: list[ItemCondition]) -> bool:
    """The first ``Ready`` condition is True."""
    for condition in conditions:
        if condition.type == READY:
            return condition.status == "True"
    return False


def owner_refs_of(data: bytes) -> tuple[OwnerRef, ...]:
    """``projection.owner_refs`` of the same bytes (``str(x or "")`` of a str or None is
    ``x or ""``)."""
    return tuple(
        OwnerRef(
            kind=owner.kind or "",
            name=owner.name or "",
            uid=owner.uid or "",
            controller=owner.controller is True,
        )
        for owner in _OWNERS.decode(data) or ()
    )


def exact_requests_and_qos(spec: ItemSpec, status: LeanItemStatus) -> tuple[Mapping[str, int], str]:
    """The exact rules, on the dicts ``wire`` makes of the same bytes."""
    spec_dict: dict[str, Any] = {}
    if spec.containers is not None:
        spec_dict["containers"] = [_container_dict(c) for c in spec.containers]
    if spec.init_containers is not None:
        spec_dict["initContainers"] = [_container_dict(c) for c in spec.init_containers]
    for field, raw in (("overhead", spec.overhead), ("resources", spec.resources)):
        value = decode_any(bytes(raw))
        if value is not None:
            spec_dict[field] = value
    pod = {"spec": spec_dict, "status": {"qosClass": status.qos_class}}
    return projection.pod_requests(spec_dict), pod_qos(pod).value


def _container_dict(container: ItemContainer) -> dict[str, Any]:
    built: dict[str, Any] = {}
    resources = decode_any(bytes(container.resources))
    if resources is not None:
        built["resources"] = resources
    if container.restart_policy is not None:
        built["restartPolicy"] = container.restart_policy
    return built


def volume_facts(volumes: list[ItemVolume]) -> tuple[bool, tuple[str, ...]]:
    """Whether any volume is node-local storage, and the claim names, in one pass."""
    local = False
    claims: list[str] = []
    for volume in volumes:
        if volume.empty_dir is not None or volume.host_path is not None:
            local = True
        claim = volume.persistent_volume_claim
        # A dict, as the decoder makes every object of an ``Any`` field (``isinstance``
        # against ``Mapping`` runs the ABC's Python-level check, for every volume).
        if claim is not None and type(claim) is dict and claim.get("claimName"):
            claims.append(str(claim["claimName"]))
    return local, tuple(claims) if claims else ()


def pending_extra(extra: Mapping[str, Any], status: LeanItemStatus) -> Mapping[str, Any]:
    """``projection.project_pod``'s extras for a pod bound to no node (rare): the shared
    extras of its template, plus when it became Unschedulable, if it did."""
    if not status.conditions:
        return extra
    conditions = {"conditions": msgspec.to_builtins(status.conditions)}
    since = projection.unschedulable_since("", conditions)
    if since is None:
        return extra
    return {**extra, UNSCHEDULABLE_SINCE: since}


_ContainerState = tuple[int, str | None, str | None, int | None]
StatusKey = tuple[
    str | None,
    tuple[tuple[str | None, str | None, str | None, float | None], ...],
    tuple[ItemContainerStatus, ...],
    tuple[ItemContainerStatus, ...],
    tuple[ItemContainerStatus, ...],
]


def _container_states(
    statuses: tuple[ItemContainerStatus, ...],
) -> tuple[_ContainerState, ...]:
    """Per container: restarts, the waiting and terminated reasons (``None`` when that
    state is absent) and the exit code; all ``container_status`` reads."""
    states = []
    for each in statuses:
        state = each.state
        waiting = state.waiting if state is not None else None
        terminated = state.terminated if state is not None else None
        states.append(
            (
                each.restart_count or 0,
                None if waiting is None else waiting.reason or "",
                None if terminated is None else terminated.reason or "",
                None if terminated is None else terminated.exit_code,
            )
        )
    return tuple(states)


def status_info(key: StatusKey) -> PodStatusInfo | None:
    reason, conditions, containers, init_containers, ephemeral_containers = key
    info = PodStatusInfo(
        reason=reason or "",
        containers=_kept(containers),
        init_containers=_kept(init_containers),
        ephemeral_containers=_kept(ephemeral_containers),
        conditions=tuple(
            PodConditionInfo(
                type=intern(kind or ""),
                status=intern(value or ""),
                reason=intern(why or ""),
                since_creation=since,
            )
            for kind, value, why, since in conditions
        ),
    )
    return None if info.empty else info


def _kept(statuses: tuple[ItemContainerStatus, ...]) -> tuple[ContainerStatusInfo, ...]:
    kept = [container_status(*state) for state in _container_states(statuses)]
    return tuple(info for info in kept if info is not None)
