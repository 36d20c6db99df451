"""Where each evicted pod would land, as a plan says it: the destination, the nodes it may
land on, and the nodes' loads before and after (``core.placement`` computes them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Placement:
    node: str | None
    """The destination (one of ``candidates``); ``None`` when the pod goes nowhere."""
    note: str = ""
    """Why there is no destination, or what is special about it."""
    candidates: tuple[str, ...] = ()
    """Every node the replacement may land on, by name (see ``PlannedEviction.candidates``)."""


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """A node's requests before and after the plan, against its allocatable."""

    node: str
    allocatable: Mapping[str, int]
    before: Mapping[str, int]
    after: Mapping[str, int]


@dataclass(frozen=True)
class PlacementResult:
    placements: tuple[Placement, ...]
    """One per planned eviction, in the plan's order."""
    loads: tuple[NodeLoad, ...]
    """Every node of the snapshot, by name."""
