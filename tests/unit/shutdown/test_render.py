"""``shutdown plan`` rendering: phases with ranges, budgets, deadlines and pods."""

from __future__ import annotations

import json
from typing import Any

from agent.config.shutdown import PriorityBucket
from agent.shutdown.phases import plan_phases
from agent.shutdown.render import render_json, render_table
from tests.harness import kubeobjects
from tests.harness.kubeobjects import owner_ref

BUCKETS = (PriorityBucket(0, 10), PriorityBucket(1000, 20), PriorityBucket(100000, 30))


def pod(name: str, priority: int, owner: str | None = None) -> dict[str, Any]:
    """A Running pod in ``shop`` of ``priority`` with 15 s of grace, owned by an ``owner``."""
    return kubeobjects.pod(
        name,
        namespace="shop",
        uid=name,
        owner=None if owner is None else owner_ref(owner, "x"),
        priority=priority,
        grace_seconds=15,
        phase="Running",
    )


def test_table_shows_every_phase_its_pods_and_the_skipped() -> None:
    """The table lists phases in order with range, budget and deadline, then pods and skips."""
    plan = plan_phases(BUCKETS, [pod("web", 0), pod("db", 5000), pod("ds", 0, owner="DaemonSet")])
    text = render_table(plan, node="n1", mode="delete")
    lines = text.splitlines()
    assert lines[0] == (
        "Graceful shutdown plan for node n1: mode delete, budget 1m0s "
        "(dry run, nothing was changed)"
    )
    assert lines[2].split() == ["PHASE", "PRIORITY", "BUDGET", "DEADLINE", "PODS"]
    assert lines[3].split() == ["1", "<=", "999", "10s", "+10s", "1"]
    assert lines[4].split() == ["2", "1000..99999", "20s", "+30s", "1"]
    assert lines[5].split() == ["3", ">=", "100000", "30s", "+1m0s", "0"]
    assert "  shop/web  priority 0  grace 10s" in lines
    assert "  shop/db  priority 5000  grace 15s" in lines
    assert lines[-2:] == ["Left alone:", "  shop/ds  daemonset"]


def test_json_carries_the_same_plan() -> None:
    """The JSON form has every phase with its bounds, budget, deadline offset and pods."""
    plan = plan_phases(BUCKETS, [pod("web", 0)])
    document = json.loads(render_json(plan, node="n1", mode="evict", note="hello"))
    assert document["budgetSeconds"] == 60
    assert document["mode"] == "evict"
    assert document["note"] == "hello"
    first = document["phases"][0]
    assert (first["minPriority"], first["maxPriority"], first["deadlineOffsetSeconds"]) == (
        None,
        999,
        10,
    )
    assert first["pods"] == [
        {"namespace": "shop", "name": "web", "uid": "web", "priority": 0, "gracePeriodSeconds": 10}
    ]
