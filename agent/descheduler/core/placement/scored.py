"""One pod's best nodes, as the scorers hand them to the simulation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Scored:
    """One pod's best nodes: the total score and the nodes (indexes) that reach it."""

    best: int
    nodes: list[int]
