"""What the scorers read of the cluster as the plan leaves it: the simulation, as a Protocol.

``simulation`` calls the scorers (``fastscore``, ``fullscore``) for each pick, and they read
its nodes, counts and indexes back. Typed by the class itself, each scorer would import the
simulation that imports it; typed by this, the imports run one way: the simulation imports
the scorers, and both import this.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from typing import Protocol

from agent.descheduler.core.placement.nodes import PodSize, Ranking, SimNode
from agent.descheduler.core.placement.profile import SchedulerProfile
from agent.descheduler.core.placement.scoring import SchedulerTerm
from agent.descheduler.core.rules.existingterms import ExistingTerms
from agent.descheduler.core.rules.podindex import PodIndex, Slot
from agent.descheduler.model.cluster import ClusterSnapshot


class PlannedCluster(Protocol):
    """The nodes and pods as the plan leaves them so far (``simulation.Simulation``)."""

    @property
    def snapshot(self) -> ClusterSnapshot:
        """The cluster before the plan (its namespaces, for namespace selectors)."""

    @property
    def profile(self) -> SchedulerProfile:
        """The score plugins and weights of the scheduler predicted for."""

    @property
    def nodes(self) -> Sequence[SimNode]:
        """Every node, by index (in name order)."""

    @property
    def index(self) -> Mapping[str, int]:
        """Node name -> its index."""

    @property
    def owners(self) -> Mapping[str, Counter[int]]:
        """Controller UID -> node index -> its scheduled pods there (not terminating)."""

    @property
    def image_nodes(self) -> Mapping[str, int]:
        """Image name -> how many nodes have it."""

    @property
    def soft_tainted(self) -> Sequence[int]:
        """The nodes with a PreferNoSchedule taint."""

    @property
    def unnamed_hosts(self) -> Set[int]:
        """The nodes without the hostname label."""

    @property
    def zone_members(self) -> Mapping[str | None, frozenset[int]]:
        """Zone -> its nodes' indexes."""

    @property
    def has_affinity_scorers(self) -> bool:
        """Whether a pod (finished ones too) has terms that add to InterPodAffinity's scores."""

    @property
    def pod_index(self) -> PodIndex:
        """The unfinished pods in place, for the inter-pod filter and scores."""

    @property
    def required_affinity(self) -> ExistingTerms[SchedulerTerm]:
        """The required pod affinity terms of the pods in place."""

    @property
    def preferred_affinity(self) -> ExistingTerms[SchedulerTerm]:
        """The preferred pod affinity terms of the pods in place."""

    @property
    def preferred_anti_affinity(self) -> ExistingTerms[SchedulerTerm]:
        """The preferred pod anti-affinity terms of the pods in place."""

    def slots_of(self, uid: str) -> tuple[Slot, ...]:
        """The index's slots of the snapshot's pods with ``uid`` still in place."""

    def ranking(self, size: PodSize) -> Ranking:
        """The nodes ranked by their resource scores for pods of ``size``."""
