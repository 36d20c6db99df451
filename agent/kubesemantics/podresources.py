"""A container's (or pod's) requests and limits as exact numbers, defaulted like the API server.

The API server copies a limit into a missing request of the same resource before it stores a
pod, and kubelet repeats that for pods from older clusters. Pods read from a watch are already
defaulted; doing it again here keeps hand-written and file-sourced pods on the same rules.
Quantities stay ``Fraction`` so "request equals limit" is an exact comparison, as in Go.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from agent.kubesemantics.quantities import parse_quantity

CPU = "cpu"
MEMORY = "memory"
QOS_RESOURCES = (CPU, MEMORY)


@dataclass(frozen=True)
class Resources:
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    limits: Mapping[str, Fraction] = field(default_factory=dict)
    """Quantities that do not parse are dropped, so they count as unset."""

    def request(self, name: str) -> Fraction:
        return self.requests.get(name, Fraction(0))

    def limit(self, name: str) -> Fraction:
        return self.limits.get(name, Fraction(0))

    @property
    def empty(self) -> bool:
        return not self.requests and not self.limits


def _quantities(raw: Any) -> dict[str, Fraction]:
    if not isinstance(raw, Mapping):
        return {}
    parsed: dict[str, Fraction] = {}
    for name, value in raw.items():
        # A quantity that does not parse is dropped: it counts as unset.
        with contextlib.suppress(ValueError, TypeError):
            parsed[str(name)] = parse_quantity(value)
    return parsed


def parse_resources(raw: Any) -> Resources:
    """``resources`` of a container or a pod spec; a missing request defaults to the limit."""
    if not isinstance(raw, Mapping):
        return Resources()
    requests = _quantities(raw.get("requests"))
    limits = _quantities(raw.get("limits"))
    for name, limit in limits.items():
        requests.setdefault(name, limit)
    return Resources(requests=requests, limits=limits)


def allocated_resources(spec_resources: Any, container_status: Any) -> Resources:
    """A container's resources as kubelet holds them after an in-place resize.

    kubelet sizes a container from the resources it allocated and checkpointed, not from the
    spec: a resize it has not accepted (or found infeasible) changes only the spec. The API
    shows the allocation as ``containerStatuses[].allocatedResources`` (requests only) and
    what was applied as ``containerStatuses[].resources`` (requests and limits). Requests are
    taken from ``allocatedResources``, else ``resources.requests``; limits from
    ``resources.limits`` (kubelet fills it from the allocation when the runtime reports
    none). Each falls back to the spec when the status does not have it: a container not
    started yet, or a cluster without InPlacePodVerticalScaling.
    """
    spec = spec_resources if isinstance(spec_resources, Mapping) else {}
    status = container_status if isinstance(container_status, Mapping) else {}
    actuated = status.get("resources")
    actuated = actuated if isinstance(actuated, Mapping) else {}
    raw_requests = spec.get("requests")
    if isinstance(status.get("allocatedResources"), Mapping):
        raw_requests = status["allocatedResources"]
    elif isinstance(actuated.get("requests"), Mapping):
        raw_requests = actuated["requests"]
    raw_limits = spec.get("limits")
    if isinstance(actuated.get("limits"), Mapping):
        raw_limits = actuated["limits"]
    return parse_resources({"requests": raw_requests, "limits": raw_limits})
