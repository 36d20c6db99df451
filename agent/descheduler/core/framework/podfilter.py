"""The pod filter most upstream plugins build first: namespaces, labelSelector, the evictor.

Upstream's ``podutil.NewOptions().WithFilter(Filter + PreEvictionFilter).WithNamespaces(...)
.WithoutNamespaces(...).WithLabelSelector(...)``, once, for the plugins that take
``namespaces`` and ``labelSelector`` args. The cheap checks run first: every check is pure,
so the order changes nothing but the cost (the evictor's ``nodeFit`` is the dear one).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.descheduler.core.framework.args import LabelSelector, Namespaces
from agent.descheduler.core.framework.types import Evictor
from agent.descheduler.model.cluster import PodInfo
from agent.kubesemantics.labelselector import Selector, matches


@dataclass(frozen=True)
class PodFilter:
    evictor: Evictor
    namespaces: Namespaces | None = None
    selector: Selector | None = None
    """``None`` without a ``labelSelector`` (every pod); an empty one selects every pod too."""

    @classmethod
    def build(
        cls, evictor: Evictor, namespaces: Namespaces | None, label_selector: LabelSelector | None
    ) -> PodFilter:
        selector = label_selector.compiled() if label_selector is not None else None
        return cls(evictor, namespaces, selector)

    def admits_scope(self, pod: PodInfo) -> bool:
        """The ``namespaces`` and ``labelSelector`` args admit the pod."""
        if self.namespaces is not None and not self.namespaces.admits(pod.namespace):
            return False
        return self.selector is None or matches(self.selector, pod.labels)

    def admits_eviction(self, pod: PodInfo) -> bool:
        """The profile's ``filter`` and ``preEvictionFilter`` plugins accept the pod."""
        return self.evictor.filter(pod) and self.evictor.pre_eviction_filter(pod)
