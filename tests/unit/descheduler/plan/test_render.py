"""The offline plan's tables: destinations, why a pod goes nowhere, utilization bars."""

from __future__ import annotations

import pytest

from agent.descheduler.core.placement.replacements import place, with_destinations
from agent.descheduler.plan.render import bar, render_plan_table
from agent.descheduler.plan.shape import Plan, PlannedEviction, TaintChange
from tests.harness.deschedulerstate import node, pod, snapshot


@pytest.mark.parametrize(
    ("used", "capacity", "expected"),
    [
        pytest.param(0, 4000, "[----------]   0%", id="empty"),
        pytest.param(1900, 4000, "[#####-----]  48%", id="rounded-to-the-nearest-cell"),
        pytest.param(4000, 4000, "[##########] 100%", id="full"),
        pytest.param(6000, 4000, "[##########] 150%", id="over-committed-stays-full"),
        pytest.param(5, 0, "[----------]   0%", id="no-capacity"),
    ],
)
def test_bar(used: int, capacity: int, expected: str) -> None:
    """A ten-cell bar of requests over allocatable, then the percentage."""
    assert bar(used, capacity) == expected


def test_table_lists_destinations_and_why_none() -> None:
    """Each row ends with its destination (for one a PDB holds, where it goes once the
    budget allows; "-" for one a PDB refuses, which is not sent; "none" when no node takes
    it), pods going nowhere are explained below, then the bars and the summary."""
    state = snapshot(
        node("src"),
        node("other", cpu="1"),
        pod("fits", "src", cpu="500m"),
        pod("too-big", "src", cpu="2"),
        pod("kept", "src"),
        pod("stays", "src"),
    )
    by_name = {p.name: p for p in state.pods_on("src")}

    def eviction(name: str, blocked: str = "", *, held: bool = True) -> PlannedEviction:
        found = by_name[name]
        return PlannedEviction(
            found.namespace, found.name, found.uid, "src", "P", "p", "why", blocked,
            held=bool(blocked) and held,
        )  # fmt: skip

    plan = Plan(
        evictions=[
            eviction("fits"),
            eviction("too-big"),
            eviction("kept", "default/b"),
            eviction("stays", "default/b", held=False),
        ]
    )
    placed = place(state, plan.evictions)
    lines = render_plan_table(with_destinations(plan, placed), placed).splitlines()
    assert [line.split(maxsplit=5)[-1] for line in lines[1:5]] == [
        "other",
        "none",
        "other once its budget allows",
        "-",
    ]
    assert (
        "  default/too-big: 0/2 nodes are available: 1 insufficient cpu, "
        "1 the node it is evicted from"
    ) in lines
    [other] = [line for line in lines if line.startswith("other ")]
    assert "[----------]   0% -> [######----]  60%" in other  # its cpu, before and after
    assert lines[-3] == (
        "2 pods would be evicted at once, 1 held by a PodDisruptionBudget (sent as it allows), "
        "1 refused by one (left to the next cycle)"
    )
    assert lines[-1] == (
        "destinations: 2 pods would move to another node, 0 come back where they were, 1 go nowhere"
    )


def test_offline_table_lists_the_taints_of_ours_the_plan_applies() -> None:
    """A plan that adds a taint of ours (a rescue) says so in the offline table, as the live
    dry run's table does, right after the eviction rows."""
    state = snapshot(node("a"), pod("web", "a"))
    [web] = state.pods_on("a")
    eviction = PlannedEviction(web.namespace, web.name, web.uid, "a", "P", "p", "why")
    taint = TaintChange(
        node="a",
        key="CriticalAddonsOnly",
        value="kube-system_dns",
        effect="NoSchedule",
        add=True,
        plugin="CriticalAddonRescue",
        profile="p",
        reason="make room for kube-system/dns",
    )
    plan = Plan(evictions=[eviction], taints=[taint])
    placed = place(state, plan.evictions)
    lines = render_plan_table(with_destinations(plan, placed), placed).splitlines()
    assert lines[2] == (
        "add taint CriticalAddonsOnly=kube-system_dns:NoSchedule on a "
        "(CriticalAddonRescue: make room for kube-system/dns)"
    )
