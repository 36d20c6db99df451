"""The ``namespaces`` and ``labelSelector`` args many plugins take, as one pod filter.

Upstream builds it per plugin with ``podutil.NewOptions().WithNamespaces(...)
.WithoutNamespaces(...).WithLabelSelector(...)``: a pod passes when its namespace is admitted
(``include`` or ``exclude``, never both) and, with a selector, its labels match (an empty
selector matches every pod). The evictor's filters are not part of it; each plugin asks them
where upstream does.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.descheduler.framework.args import LabelSelector, Namespaces
from agent.descheduler.model import PodInfo
from agent.kube.labelselector import Selector, matches


@dataclass(frozen=True)
class PodFilter:
    namespaces: Namespaces | None = None
    selector: Selector | None = None

    @classmethod
    def of(cls, namespaces: Namespaces | None, label_selector: LabelSelector | None) -> PodFilter:
        selector = label_selector.compiled() if label_selector is not None else None
        return cls(namespaces, selector or None)

    def admits(self, pod: PodInfo) -> bool:
        if self.namespaces is not None and not self.namespaces.admits(pod.namespace):
            return False
        return self.selector is None or matches(self.selector, pod.labels)
