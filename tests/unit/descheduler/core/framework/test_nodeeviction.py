"""evict_in_order: upstream's answer to each limit, and no pod judged past a node's limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.core.errors import NamespaceLimitReached, NodeLimitReached, TotalLimitReached
from agent.descheduler.core.framework.nodeeviction import evict_in_order
from agent.descheduler.model.cluster import PodInfo
from tests.harness.deschedulerstate import pod


class RefusingEvictor:
    """Evicts every pod except the ones named, which raise the given limit."""

    def __init__(self, refusals: dict[str, type[Exception]]) -> None:
        self.refusals = refusals
        self.evicted: list[str] = []

    def filter(self, _pod: PodInfo) -> bool:
        return True

    def pre_eviction_filter(self, _pod: PodInfo) -> bool:
        return True

    def evict(self, target: PodInfo, plugin: str, reason: str = "") -> bool:
        assert (plugin, reason) == ("P", "why")
        refusal = self.refusals.get(target.name)
        if refusal is not None:
            raise refusal(target.name)
        self.evicted.append(target.name)
        return True


@pytest.mark.parametrize(
    ("limit", "evicted", "judged", "goes_on"),
    [
        pytest.param(
            NamespaceLimitReached, ["a", "c"], ["a", "b", "c"], True, id="namespace-skips"
        ),
        pytest.param(NodeLimitReached, ["a"], ["a", "b"], True, id="node-ends-the-node"),
        pytest.param(TotalLimitReached, ["a"], ["a", "b"], False, id="total-ends-the-plugin"),
    ],
)
def test_each_limit_is_answered_as_upstream(
    limit: type[Exception], evicted: list[str], judged: list[str], goes_on: bool
) -> None:
    """A namespace limit skips the pod, a node limit ends the node, the total limit ends the
    plugin; past a node or total limit no later pod is even judged."""
    evictor = RefusingEvictor({"b": limit})
    seen: list[str] = []

    def condemned() -> Iterator[tuple[PodInfo, str]]:
        for name in ("a", "b", "c"):
            seen.append(name)
            yield project_pod(pod(name, "n1")), "why"

    assert evict_in_order(evictor, "P", condemned()) is goes_on  # type: ignore[arg-type]
    assert evictor.evicted == evicted
    assert seen == judged
