"""Taints against tolerations, the way the scheduler and the DaemonSet controller match them.

One copy for every capability: the readiness gate asks whether a critical DaemonSet belongs
on this node, the descheduler whether a pod fits elsewhere. Both depend on these rules, so
they follow ``v1.Toleration.ToleratesTaint`` exactly (including the numeric ``Lt``/``Gt``
operators of newer releases), plus the tolerations the DaemonSet controller adds to every
daemon pod.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from agent.kubesemantics.wellknown import (
    DISK_PRESSURE_TAINT,
    MEMORY_PRESSURE_TAINT,
    NETWORK_UNAVAILABLE_TAINT,
    NO_EXECUTE,
    NO_SCHEDULE,
    NOT_READY_TAINT,
    PID_PRESSURE_TAINT,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
)

SCHEDULING_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
"""The effects the DaemonSet controller checks; PreferNoSchedule never keeps a pod away."""

_DECIMAL_INTEGER = re.compile(r"^-?(0|[1-9][0-9]*)$")


def _exists(key: str, effect: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": effect}


DAEMON_POD_TOLERATIONS: tuple[dict[str, str], ...] = (
    _exists(NOT_READY_TAINT, NO_EXECUTE),
    _exists(UNREACHABLE_TAINT, NO_EXECUTE),
    _exists(DISK_PRESSURE_TAINT, NO_SCHEDULE),
    _exists(MEMORY_PRESSURE_TAINT, NO_SCHEDULE),
    _exists(PID_PRESSURE_TAINT, NO_SCHEDULE),
    _exists(UNSCHEDULABLE_TAINT, NO_SCHEDULE),
)
"""What ``AddOrUpdateDaemonPodTolerations`` adds to every daemon pod."""

HOST_NETWORK_TOLERATIONS: tuple[dict[str, str], ...] = (
    _exists(NETWORK_UNAVAILABLE_TAINT, NO_SCHEDULE),
)
"""Added on top for ``hostNetwork`` daemon pods."""


def _numeric(text: str) -> int | None:
    return int(text) if _DECIMAL_INTEGER.match(text) else None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:  # noqa: PLR0911 - one exit per operator
    """Whether one toleration tolerates one taint."""
    effect = str(toleration.get("effect") or "")
    if effect and effect != taint.get("effect"):
        return False
    key = str(toleration.get("key") or "")
    if key and key != taint.get("key"):
        return False
    operator = str(toleration.get("operator") or "Equal")
    wanted = str(toleration.get("value") or "")
    actual = str(taint.get("value") or "")
    if operator == "Exists":
        return True
    if operator == "Equal":
        return wanted == actual
    if operator in ("Lt", "Gt"):
        limit, value = _numeric(wanted), _numeric(actual)
        if limit is None or value is None:
            return False
        return value < limit if operator == "Lt" else value > limit
    return False


def daemon_pod_tolerations(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The template's tolerations plus the DaemonSet controller's defaults."""
    tolerations: list[Mapping[str, Any]] = list(pod_spec.get("tolerations") or [])
    tolerations.extend(DAEMON_POD_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        tolerations.extend(HOST_NETWORK_TOLERATIONS)
    return tolerations


def untolerated(
    taints: Iterable[Mapping[str, Any]], tolerations: list[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The NoSchedule/NoExecute taints that no toleration tolerates, in node order."""
    return [
        taint
        for taint in taints
        if taint.get("effect") in SCHEDULING_EFFECTS
        and not any(tolerates(toleration, taint) for toleration in tolerations)
    ]


def describe_taint(taint: Mapping[str, Any]) -> str:
    """``key=value:Effect`` (``key:Effect`` without a value), as kubectl prints taints."""
    value = taint.get("value")
    head = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{head}:{taint.get('effect')}"
