"""Which taints on a node are ours: their keys, and the annotations that mark we added them.

Plain names and data, no client: the descheduler's pure plugins read them, and
``ownedtaints`` writes them. Each taint we add to a node that is not our own goes with an
annotation of ours whose value is the taint's value (see ``ownedtaints``). Any node may write
its own Node's annotations, so such a mark only says where our patch landed; whether a taint
is ours is the descheduler's own record's to say (``agent.descheduler.model.taintrecord``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from agent.kubesemantics.nodekeys import (
    DESCHEDULER_ANNOTATIONS,
    EMPTYING_ANNOTATION,
    EMPTYING_TAINT_KEY,
    OUT_OF_SERVICE_ANNOTATION,
    OUT_OF_SERVICE_TAINT_KEY,
    RESCUE_ANNOTATION,
    RESCUE_TAINT_KEY,
)
from agent.kubesemantics.wellknown import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE

TAINT_VALUE_MAX = 63
"""A taint's value is a label value: at most 63 characters, no ``/``."""
OUT_OF_SERVICE_VALUE = "nodeshutdown"
EMPTYING_VALUE = "HighNodeUtilization"
OWNED_ANNOTATIONS = DESCHEDULER_ANNOTATIONS


@dataclass(frozen=True)
class OwnedTaint:
    """A taint of ours and the annotation that records we added it."""

    key: str
    value: str
    effect: str
    annotation: str

    @property
    def taint_json(self) -> Mapping[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


def rescue_value(pod_key: str) -> str:
    """``<namespace>_<pod>`` (the rescheduler's form: ``/`` is not allowed in a taint value),
    shortened with a hash of the whole when longer than a label value may be."""
    value = pod_key.replace("/", "_", 1)
    if len(value) <= TAINT_VALUE_MAX:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    return value[: TAINT_VALUE_MAX - 9].rstrip("-_.") + "-" + digest


def rescue_taint(pod_key: str) -> OwnedTaint:
    """The rescue taint for the add-on ``<namespace>/<pod>``."""
    return rescue_taint_valued(rescue_value(pod_key))


def rescue_taint_valued(value: str) -> OwnedTaint:
    """The rescue taint with this value (as our annotation on a node records it)."""
    return OwnedTaint(RESCUE_TAINT_KEY, value, NO_SCHEDULE, RESCUE_ANNOTATION)


def out_of_service_taint() -> OwnedTaint:
    return OwnedTaint(
        OUT_OF_SERVICE_TAINT_KEY, OUT_OF_SERVICE_VALUE, NO_EXECUTE, OUT_OF_SERVICE_ANNOTATION
    )


def emptying_taint() -> OwnedTaint:
    """The soft taint on a node HighNodeUtilization is emptying: the scheduler's
    TaintToleration score (weight 3) then steers the replacements of its pods elsewhere."""
    return OwnedTaint(EMPTYING_TAINT_KEY, EMPTYING_VALUE, PREFER_NO_SCHEDULE, EMPTYING_ANNOTATION)


def owned_taint_for(annotation: str, value: str) -> OwnedTaint:
    """The taint of ours that ``annotation`` (one of ``OWNED_ANNOTATIONS``) with ``value``
    stands for; raises ``ValueError`` for any other annotation."""
    if annotation == RESCUE_ANNOTATION:
        return rescue_taint_valued(value)
    if annotation == OUT_OF_SERVICE_ANNOTATION:
        return out_of_service_taint()
    if annotation == EMPTYING_ANNOTATION:
        return emptying_taint()
    raise ValueError(f"{annotation!r} marks no taint of ours")


def is_emptying_taint(taint: Mapping[str, object]) -> bool:
    """Our soft emptying taint (by key: the key is in our domain). A steer for the scheduler
    while a cycle's replacements find their place, it is no part of the cluster the plugins
    judge: with it counted, a later cycle would decide otherwise than upstream would."""
    return taint.get("key") == EMPTYING_TAINT_KEY
