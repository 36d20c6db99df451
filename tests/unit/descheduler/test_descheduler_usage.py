"""NodeReports become the plugins' NodeUsage: units, staleness and the no-room states."""

from __future__ import annotations

import pytest

from agent.descheduler.usage import node_usage, usage_by_node
from agent.kube.nodereports import NodeUsageReport, PodUsage

NOW = 1_800_000_000.0


def _report(**changes: object) -> NodeUsageReport:
    fields: dict[str, object] = {
        "node": "node-a",
        "observed_time": NOW - 10,
        "heartbeat_seconds": 60.0,
        "cpu_cores": 3.5,
        "memory_bytes": 8 * 2**30,
        "swap_bytes": 0,
        "cpu_capacity": 16.0,
        "memory_capacity": 64 * 2**30,
        "swap_capacity": 0,
        "cpu_allocatable": 15.5,
        "memory_allocatable": 60 * 2**30,
        "gate_held": False,
        "waiting_for": (),
        "shutdown": "none",
        "shutdown_start": None,
        "budget_end": None,
        "agent_stopped": False,
        "pods": (PodUsage("team-a", "web-0", "uid-1", 0.0004, 2**20, 0),),
    }
    fields.update(changes)
    return NodeUsageReport(**fields)  # type: ignore[arg-type]


class TestNodeUsage:
    def test_cpu_becomes_millicores_rounded_up_and_memory_stays_bytes(self) -> None:
        """Cores become millicores (a trace of use still counts as 1m), bytes stay bytes."""
        usage = node_usage(_report(), NOW)
        assert usage.usage == {"cpu": 3500, "memory": 8 * 2**30}
        assert usage.pod_usage == {"uid-1": {"cpu": 1, "memory": 2**20}}

    @pytest.mark.parametrize(
        ("age", "stale"),
        [
            pytest.param(180.0, False, id="three-heartbeats-old-is-fresh"),
            pytest.param(180.5, True, id="older-than-three-heartbeats-is-stale"),
        ],
    )
    def test_a_report_older_than_three_heartbeats_is_stale(self, age: float, stale: bool) -> None:
        """Staleness is the reader's rule: more than three heartbeats without a report."""
        assert node_usage(_report(observed_time=NOW - age), NOW).stale is stale

    @pytest.mark.parametrize(
        "changes",
        [
            pytest.param({"shutdown": "inProgress"}, id="shutting-down"),
            pytest.param({"shutdown": "completed"}, id="shutdown-completed"),
            pytest.param({"gate_held": True}, id="gated"),
            pytest.param({"agent_stopped": True}, id="agent-stopped"),
        ],
    )
    def test_a_node_going_down_gated_or_unwatched_is_no_room(
        self, changes: dict[str, object]
    ) -> None:
        """Shutting down (or done), a held readiness gate, or a stopped agent: never room."""
        assert not node_usage(_report(**changes), NOW).usable_as_destination

    def test_a_healthy_report_is_room(self) -> None:
        """A fresh report of a node with no shutdown, no gate and a running agent is room."""
        assert node_usage(_report(), NOW).usable_as_destination

    def test_usage_by_node_keys_every_report_by_its_node(self) -> None:
        """Every report is kept, stale ones too, under its node's name."""
        reports = [_report(), _report(node="node-b", observed_time=NOW - 1000)]
        usage = usage_by_node(reports, NOW)
        assert sorted(usage) == ["node-a", "node-b"]
        assert usage["node-b"].stale
