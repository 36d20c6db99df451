"""A held LowNodeUtilization eviction is sent only while its node still needs it: the plan
gives it its node's figures (``NodeTarget``), and the rule says whether the node, less what
has left it since the plan, is still above its target."""

from __future__ import annotations

from typing import Any

from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.plan.shape import NodeTarget, Plan, PlannedEviction
from tests.harness.deschedulerstate import node, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

LNU = "LowNodeUtilization"
ARGS = {
    "thresholds": {"cpu": 20},
    "targetThresholds": {"cpu": 50},
    "evictableNamespaces": {"exclude": ["batch"]},
}
"""On ``hot`` (4 CPUs): over 2000m is above target."""


def _web(index: int) -> dict[str, Any]:
    return pod(f"web-{index}", "hot", cpu="300m", owner=owner_ref("ReplicaSet", "web-1"))


def _batch(index: int) -> dict[str, Any]:
    return pod(
        f"batch-{index}",
        "hot",
        namespace="batch",
        cpu="300m",
        owner=owner_ref("ReplicaSet", "batch-1"),
    )


def _plan() -> Plan:
    """``hot``: 8 pods of ``web`` (its implicit budget: 2 of 8 at once) and 4 of ``batch``
    (a namespace LowNodeUtilization leaves alone), 300m each: 3600m, 90 %; two cold nodes."""
    return run_cycle(
        policy((LNU, ARGS)),
        snapshot(
            node("hot"),
            *(_web(i) for i in range(8)),
            *(_batch(i) for i in range(4)),
            node("cold-a"),
            node("cold-b"),
        ),
    )


def _target(eviction: PlannedEviction) -> NodeTarget:
    assert eviction.while_over is not None
    return eviction.while_over


def test_a_node_is_above_target_until_what_left_it_takes_it_to_the_target() -> None:
    """Above target on any resource, the pods gone taken off at their weighed usage; exactly
    at the target is not above (upstream's ``isNodeAboveTargetUtilization``); a pod the node
    did not count changes nothing."""
    target = NodeTarget(
        node="n",
        usage={"cpu": 2600, "pods": 3},
        target={"cpu": 2000, "pods": 55},
        pods={"a": {"cpu": 300, "pods": 1}, "b": {"cpu": 300, "pods": 1}},
    )
    assert target.over(())
    assert target.over({"a"})
    assert target.over({"a", "elsewhere"})
    assert not target.over({"a", "b"})
    assert NodeTarget("n", {"pods": 56}, {"cpu": 2000, "pods": 55}, {}).over(())


def test_held_evictions_carry_their_nodes_figures_and_lnu_alone_needs_each() -> None:
    """LowNodeUtilization takes ``hot`` from 3600m to 1800m with 6 of ``web``'s pods: 2 go at
    once, 4 are held by the implicit budget and carry the node as planned. With only the
    plan's earlier evictions gone, each held one is still needed when it comes up."""
    plan = _plan()
    assert [(e.name, e.held) for e in plan.evictions] == [(f"web-{i}", i >= 2) for i in range(6)]
    assert [e.while_over for e in plan.evictions[:2]] == [None, None]
    target = _target(plan.evictions[2])
    assert (target.node, target.usage["cpu"], target.target["cpu"]) == ("hot", 3600, 2000)
    assert all(_target(e) is target for e in plan.evictions[2:])
    for position in range(2, 6):
        before = {e.uid for e in plan.evictions[:position]}
        assert target.over(before), position


def test_what_other_plugins_took_off_the_node_counts() -> None:
    """With 2 of ``batch``'s pods gone too (another plugin's evictions), ``hot`` is at 2400m
    when the first held one comes up (needed), 2100m at the second (needed), and 1800m at
    the third: no longer above target, so the last two are not needed."""
    plan = _plan()
    target = _target(plan.evictions[2])
    batch = {"uid-batch-batch-0", "uid-batch-batch-1"}
    needed = [
        target.over(batch | {e.uid for e in plan.evictions[:position]}) for position in range(2, 6)
    ]
    assert needed == [True, True, False, False]
