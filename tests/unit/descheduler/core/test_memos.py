"""The cycle's memos (filter verdicts, parsed PDB selectors) give the answers the rules give,
and never outlive the cycle whose snapshot they were computed from."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.core.evictions.limits import EvictionLimits
from agent.descheduler.core.evictions.planner import Planner, ProfileEvictor
from agent.descheduler.core.rules.budgets import BudgetIndex, budgets_for
from agent.descheduler.model.cluster import PodInfo
from tests.harness.deschedulerstate import node, pdb, pod, policy, snapshot

DUP = "RemoveDuplicates"
EMPTY_DIR = {"name": "scratch", "emptyDir": {}}


class _AcceptAll:
    name = "AcceptAll"

    def __init__(self) -> None:
        self.asked = 0

    def filter(self, pod: PodInfo) -> bool:  # noqa: ARG002 - accepts every pod
        self.asked += 1
        return True

    def pre_eviction_filter(self, pod: PodInfo) -> bool:  # noqa: ARG002 - accepts every pod
        return True


def _duplicates(**kwargs: Any) -> list[dict[str, Any]]:
    return [node("n1"), node("n2"), *(pod(f"p{i}", "n1", **kwargs) for i in range(3))]


def test_filter_verdicts_do_not_leak_into_the_next_cycle() -> None:
    """A pod protected in one cycle is evictable in the next once its protection is gone."""
    same_policy = policy((DUP, None))
    protected = run_cycle(same_policy, snapshot(*_duplicates(volumes=[EMPTY_DIR])))
    unprotected = run_cycle(same_policy, snapshot(*_duplicates()))
    assert [e.name for e in protected.allowed] == []
    assert [e.name for e in unprotected.allowed] == ["p2"]


def test_a_pod_evicted_earlier_in_the_cycle_fails_the_memoised_filter() -> None:
    """The memo answers "evictable" once; after the pod's eviction the filter says no."""
    state = snapshot(node("n1"), pod("p", "n1"))
    planner = Planner(state, EvictionLimits())
    plugin = _AcceptAll()
    evictor = ProfileEvictor(planner, "p", [plugin], [plugin])
    target = state.pods_on("n1")[0]
    assert evictor.filter(target)
    assert evictor.filter(target)
    assert plugin.asked == 1
    assert evictor.evict(target, DUP)
    assert not evictor.filter(target)


def _labelled(name: str, namespace: str, labels: dict[str, str]) -> PodInfo:
    return project_pod(pod(name, "n1", namespace=namespace, labels=labels))


WEB = _labelled("web", "a", {"app": "web"})
WEB_ELSEWHERE = replace(WEB, namespace="b", uid="uid-b-web")
"""The very same label map in another namespace (the caches share equal maps)."""


@pytest.mark.parametrize(
    "asked",
    [
        pytest.param([WEB], id="selected"),
        pytest.param([_labelled("db", "a", {"app": "db"})], id="not-selected"),
        pytest.param([WEB, WEB_ELSEWHERE], id="same-labels-other-namespace"),
        pytest.param([WEB_ELSEWHERE, WEB], id="other-namespace-first"),
        pytest.param([_labelled("web2", "a", {"app": "web"}), WEB], id="equal-labels-new-map"),
    ],
)
def test_budget_index_gives_what_the_rule_gives(asked: list[PodInfo]) -> None:
    """Per pod, the index returns the same budgets in the same order as ``budgets_for``."""
    state = snapshot(
        pdb("z-web", namespace="a", match_labels={"app": "web"}),
        pdb("a-all", namespace="a"),
        pdb("other", namespace="c", match_labels={"app": "web"}),
    )
    index = BudgetIndex(state)
    for each in asked:
        assert index.budgets_for(each) == budgets_for(state, each), each.key


_KEYS = st.sampled_from(["app", "tier", "team"])
_VALUES = st.sampled_from(["web", "db", "x"])
_EXPRESSION = st.one_of(
    st.builds(
        lambda key, values, operator: {"key": key, "operator": operator, "values": values},
        _KEYS,
        st.lists(_VALUES, min_size=1, max_size=2, unique=True),
        st.sampled_from(["In", "NotIn"]),
    ),
    st.builds(
        lambda key, operator: {"key": key, "operator": operator},
        _KEYS,
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
)
_SELECTOR = st.one_of(
    st.none(),
    st.builds(
        lambda labels, expressions: {"matchLabels": labels, "matchExpressions": expressions},
        st.dictionaries(_KEYS, _VALUES, max_size=2),
        st.lists(_EXPRESSION, max_size=2),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    selectors=st.lists(_SELECTOR, min_size=1, max_size=8),
    labels=st.lists(st.dictionaries(_KEYS, _VALUES, max_size=3), min_size=1, max_size=6),
)
def test_budget_index_by_label_gives_what_the_rule_gives(
    selectors: list[dict[str, Any] | None], labels: list[dict[str, str]]
) -> None:
    """With any mix of ``matchLabels``, expressions, empty and absent selectors in one
    namespace, the label-filed index returns exactly the budgets the rule selects, in name
    order."""
    budgets = []
    for number, selector in enumerate(selectors):
        budget = pdb(f"b{(number * 7) % 10}-{number}", namespace="a")
        budget["spec"]["selector"] = selector
        budgets.append(budget)
    state = snapshot(*budgets)
    index = BudgetIndex(state)
    for number, each in enumerate(labels):
        asked = _labelled(f"p{number}", "a", each)
        assert index.budgets_for(asked) == budgets_for(state, asked), each
