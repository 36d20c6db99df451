"""metrics.k8s.io's NodeMetrics and PodMetrics as the utilization plugins read them.

Upstream's metrics collector (``metricscollector.go``) samples every node's NodeMetrics every
5 s and keeps, per node, ``round(0.9 * previous + (1 - 0.9) * sample)`` of its ``cpu``
millicores and ``memory`` bytes (Go's ``math.Round``: halves away from zero); a node's first
sample is taken as it is, and a node missing from a sample keeps its previous value ("no
entry -> duplicate the previous value"). ``NodeMetricsSmoother`` does the same with the
lists the runtime fetches (one list per sample where upstream sends one Get per node; the
figures are the same). A pod's usage is its PodMetrics' containers summed, unsmoothed, as
upstream's ``podUsage``; a container without ``cpu`` or ``memory`` leaves the pod without
usage ("container … is missing … resource"), so the plugins skip it.

Quantities are read exactly and rounded up at the end, as ``MilliValue()``/``Value()`` do.
An item that cannot be read (no name, a quantity that does not parse) is left out and
counted; it is then missing, as upstream's failed Get of it would be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from agent.descheduler.model.cluster import CPU, MEMORY
from agent.descheduler.model.gomath import go_round
from agent.descheduler.model.values import ResourceList
from agent.kubesemantics.quantities import parse_quantity

BETA = 0.9
"""Upstream's weight of the previous value."""
SAMPLE_INTERVAL_SECONDS = 5.0
"""How often upstream's collector samples (``wait.NonSlidingUntil(…, 5*time.Second, …)``)."""


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def weighted_average(previous: int, value: int) -> int:
    """Upstream's ``weightedAverage``, in the same float64 arithmetic."""
    return go_round(BETA * float(previous) + (1 - BETA) * float(value))


def smooth(previous: ResourceList | None, sample: ResourceList) -> ResourceList:
    """A node's next smoothed usage: the sample itself the first time."""
    if previous is None:
        return dict(sample)
    return {name: weighted_average(previous[name], sample[name]) for name in (CPU, MEMORY)}


def _usage(usage: Any) -> tuple[Fraction, Fraction]:
    if not isinstance(usage, dict):
        raise TypeError("no usage")
    return parse_quantity(usage[CPU]), parse_quantity(usage[MEMORY])


def _name(item: Any) -> tuple[str, str]:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise TypeError("no metadata.name")
    return str(metadata.get("namespace") or ""), metadata["name"]


@dataclass
class Read:
    """What one list said: usage by name, why some entries have none, what was unreadable."""

    usage: dict[str, ResourceList] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    unreadable: int = 0


def node_sample(items: list[Any]) -> Read:
    """A NodeMetricsList's items -> each node's ``cpu`` millicores and ``memory`` bytes."""
    read = Read()
    for item in items:
        try:
            _, name = _name(item)
            cpu, memory = _usage(item.get("usage"))
        except (KeyError, ValueError, TypeError):
            read.unreadable += 1
            continue
        read.usage[name] = {CPU: _ceil(cpu * 1000), MEMORY: _ceil(memory)}
    return read


def pod_usage(items: list[Any]) -> Read:
    """A PodMetricsList's items -> each pod's (``namespace/name``) containers summed."""
    read = Read()
    for item in items:
        try:
            namespace, name = _name(item)
            containers = _listed(item.get("containers"))
        except (KeyError, ValueError, TypeError):
            read.unreadable += 1
            continue
        key = f"{namespace}/{name}"
        problem, total = _containers(containers)
        if problem:
            read.problems[key] = problem
        else:
            read.usage[key] = {CPU: _ceil(total[CPU] * 1000), MEMORY: _ceil(total[MEMORY])}
    return read


def _listed(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _containers(containers: list[Any]) -> tuple[str, dict[str, Fraction]]:
    total = {CPU: Fraction(0), MEMORY: Fraction(0)}
    if not containers:
        return "no container metrics yet", total
    for container in containers:
        name = container.get("name", "") if isinstance(container, dict) else ""
        usage = container.get("usage") if isinstance(container, dict) else None
        for resource in (CPU, MEMORY):
            raw = usage.get(resource) if isinstance(usage, dict) else None
            if raw is None:
                return f'container "{name}" is missing "{resource}" resource', total
            try:
                total[resource] += parse_quantity(raw)
            except ValueError:
                return f'container "{name}" has an unreadable "{resource}": {raw!r:.40}', total
    return "", total


class NodeMetricsSmoother:
    """Each node's smoothed usage, fed one NodeMetrics list after another.

    Concurrency: fed and read on the event loop only (``update`` swaps in a new mapping, so
    a cycle holding the old one is not disturbed)."""

    def __init__(self) -> None:
        self.nodes: Mapping[str, ResourceList] = {}
        self.sampled = False
        """At least one sample was taken (upstream's ``hasSynced``)."""

    def update(self, sample: Mapping[str, ResourceList]) -> None:
        nodes = dict(self.nodes)
        for name, usage in sample.items():
            nodes[name] = smooth(nodes.get(name), usage)
        self.nodes = nodes
        self.sampled = True
