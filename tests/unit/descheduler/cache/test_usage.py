"""NodeReports become the plugins' NodeUsage only when the descheduler can believe them:
owned by their Node, well-formed, plausible, not from the future; stale by its own clock."""

from __future__ import annotations

from typing import Any

import pytest

from agent.descheduler.cache.usage import (
    FUTURE,
    IMPLAUSIBLE,
    INVALID,
    NO_NODE,
    NOT_OWNED,
    Distrusted,
    judge,
    judge_all,
)
from agent.descheduler.model.cluster import NodeInfo
from agent.kube.nodereports import NodeUsageReport, project

NOW = 1_800_000_000.0
NODE_UID = "uid-node-a"


def _node(name: str = "node-a", uid: str = NODE_UID, cpu: int = 16_000) -> NodeInfo:
    return NodeInfo(
        name=name,
        uid=uid,
        labels={},
        taints=(),
        allocatable={"cpu": cpu, "memory": 64 * 2**30, "pods": 110},
        unschedulable=False,
        ready=True,
    )


def _document(**status: Any) -> dict[str, Any]:
    """A NodeReport as the agent writes it (owned by node-a), with ``status`` changes."""
    return {
        "apiVersion": "kubelet-companion.io/v1alpha1",
        "kind": "NodeReport",
        "metadata": {
            "name": "node-a",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": NODE_UID}
            ],
        },
        "status": {
            "observedTime": "2027-01-15T08:00:00Z",
            "heartbeatSeconds": 60,
            "usage": {"cpu": 3.5, "memory": 8 * 2**30},
            "pods": [
                {
                    "namespace": "team-a",
                    "name": "web-0",
                    "uid": "uid-1",
                    "cpu": 0.0004,
                    "memory": 2**20,
                }
            ],
            "shutdown": {"state": "none"},
            **status,
        },
    }


def _report(**status: Any) -> NodeUsageReport:
    return project(_document(**status))


def _judge(
    report: NodeUsageReport, node: NodeInfo | None = None, *, changed_ago: float = 10.0
) -> Any:
    observed = report.observed_time or NOW
    return judge(
        report,
        _node() if node is None else node,
        now=observed + changed_ago,
        changed_at=observed,
    )


class TestBelieved:
    def test_cpu_becomes_millicores_rounded_up_and_memory_stays_bytes(self) -> None:
        """Cores become millicores (a trace of use still counts as 1m), bytes stay bytes."""
        usage = _judge(_report())
        assert usage.usage == {"cpu": 3500, "memory": 8 * 2**30}
        assert usage.pod_usage == {"uid-1": {"cpu": 1, "memory": 2**20}}

    def test_a_healthy_report_is_room(self) -> None:
        """A fresh report of a node with no shutdown, no gate and a running agent is room."""
        assert _judge(_report()).usable_as_destination

    @pytest.mark.parametrize(
        "status",
        [
            pytest.param({"shutdown": {"state": "inProgress"}}, id="shutting-down"),
            pytest.param({"shutdown": {"state": "completed"}}, id="shutdown-completed"),
            pytest.param({"readiness": {"gateHeld": True}}, id="gated"),
            pytest.param({"agentStopped": True}, id="agent-stopped"),
        ],
    )
    def test_a_fresh_report_of_a_node_going_down_gated_or_unwatched_is_no_room(
        self, status: dict[str, Any]
    ) -> None:
        """Shutting down (or done), a held readiness gate, or a stopped agent: no room."""
        assert not _judge(_report(**status)).usable_as_destination


class TestStalenessByTheDeschedulersClock:
    @pytest.mark.parametrize(
        ("unchanged_for", "stale"),
        [
            pytest.param(180.0, False, id="three-heartbeats-unchanged-is-fresh"),
            pytest.param(180.5, True, id="longer-unchanged-is-stale"),
        ],
    )
    def test_a_report_unchanged_for_three_heartbeats_is_stale(
        self, unchanged_for: float, stale: bool
    ) -> None:
        """Staleness counts from when the descheduler last saw the report change."""
        assert _judge(_report(), changed_ago=unchanged_for).stale is stale

    def test_a_report_dated_just_now_is_stale_when_it_stopped_changing(self) -> None:
        """The writer's fresh-looking observedTime does not keep a report fresh: what counts
        is when the descheduler saw it change (here ten minutes ago)."""
        report = _report()
        observed = report.observed_time or 0.0
        usage = judge(report, _node(), now=observed + 30, changed_at=observed + 30 - 600)
        assert usage.stale

    def test_an_old_observed_time_makes_a_just_seen_report_stale(self) -> None:
        """The writer's time can only make a report older: one first seen now (a relist) that
        says it was sampled ten minutes ago is stale."""
        report = _report()
        observed = report.observed_time or 0.0
        usage = judge(report, _node(), now=observed + 600, changed_at=observed + 600)
        assert usage.stale
        assert usage.changed_at == observed

    @pytest.mark.parametrize(
        "status",
        [
            pytest.param({"shutdown": {"state": "inProgress"}}, id="shutting-down"),
            pytest.param({"readiness": {"gateHeld": True}}, id="gated"),
            pytest.param({"agentStopped": True}, id="agent-stopped"),
        ],
    )
    def test_a_stale_report_vetoes_nothing(self, status: dict[str, Any]) -> None:
        """An uninstalled agent's last "stopped" (or "shutting down", "gated") does not keep
        its node from being room once the report is stale."""
        assert _judge(_report(**status), changed_ago=3600).usable_as_destination


class TestDistrusted:
    def test_a_report_without_its_node_is_not_believed(self) -> None:
        """No Node of the report's name: nothing to check it against."""
        report = _report()
        verdict = judge(report, None, now=NOW, changed_at=NOW)
        assert isinstance(verdict, Distrusted)
        assert verdict.reason == NO_NODE

    @pytest.mark.parametrize(
        "owners",
        [
            pytest.param([], id="no-owner"),
            pytest.param(
                [{"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "other-uid"}],
                id="an-earlier-node-of-the-same-name",
            ),
            pytest.param(
                [{"apiVersion": "v1", "kind": "Node", "name": "node-b", "uid": NODE_UID}],
                id="another-node",
            ),
            pytest.param(
                [{"apiVersion": "v1", "kind": "Pod", "name": "node-a", "uid": NODE_UID}],
                id="not-a-node",
            ),
        ],
    )
    def test_a_report_not_owned_by_its_nodes_current_uid_is_not_believed(
        self, owners: list[dict[str, str]]
    ) -> None:
        """Only a report owned by the Node of its name, by that Node's uid, is its word."""
        document = _document()
        document["metadata"]["ownerReferences"] = owners
        verdict = _judge(project(document))
        assert isinstance(verdict, Distrusted)
        assert verdict.reason == NOT_OWNED

    @pytest.mark.parametrize(
        ("status", "path"),
        [
            pytest.param({"usage": {"cpu": 10**400}}, "status.usage.cpu", id="too-large-int"),
            pytest.param({"usage": {"cpu": float("inf")}}, "status.usage.cpu", id="infinite"),
            pytest.param({"usage": {"cpu": float("nan")}}, "status.usage.cpu", id="nan"),
            pytest.param({"usage": {"memory": -5}}, "status.usage.memory", id="negative"),
            pytest.param({"usage": {"cpu": "lots"}}, "status.usage.cpu", id="not-a-number"),
            pytest.param(
                {"pods": [{"uid": "u", "cpu": -1}]}, "status.pods[0].cpu", id="negative-pod"
            ),
            pytest.param({"observedTime": "yesterday"}, "status.observedTime", id="bad-time"),
            pytest.param({"heartbeatSeconds": 10**9}, "status.heartbeatSeconds", id="heartbeat"),
        ],
    )
    def test_a_malformed_report_is_not_believed_and_says_where(
        self, status: dict[str, Any], path: str
    ) -> None:
        """A value that is not a finite, non-negative number (or timestamp, or a heartbeat in
        range) is read as nothing, and the report is distrusted with the field's path."""
        verdict = _judge(_report(**status))
        assert isinstance(verdict, Distrusted)
        assert verdict.reason == INVALID
        assert path in verdict.detail

    def test_a_huge_but_finite_usage_never_breaks_the_conversion(self) -> None:
        """``usage.cpu: 1e306`` (finite, and the CRD sets no maximum) is beyond what an
        int64 holds: distrusted before any unit conversion could overflow."""
        verdict = _judge(_report(usage={"cpu": 1e306, "memory": 2**30}))
        assert isinstance(verdict, Distrusted)
        assert (verdict.reason, "status.usage.cpu: too large" in verdict.detail) == (INVALID, True)

    @pytest.mark.parametrize(
        "status",
        [
            pytest.param({"usage": {"cpu": 1_000_000, "memory": 2**30}}, id="node-cpu"),
            pytest.param({"usage": {"cpu": 1, "memory": 2**50}}, id="node-memory"),
            pytest.param({"pods": [{"uid": f"u{i}", "cpu": 3.0} for i in range(3)]}, id="pods-sum"),
        ],
    )
    def test_usage_beyond_twice_the_nodes_allocatable_is_not_believed(
        self, status: dict[str, Any]
    ) -> None:
        """A 4-core node cannot use a million cores, nor its pods nine: usage is plausible up
        to twice what the Node (not the report) says is allocatable."""
        verdict = _judge(_report(**status), _node(cpu=4000))
        assert isinstance(verdict, Distrusted)
        assert verdict.reason == IMPLAUSIBLE

    def test_twice_the_allocatable_is_still_plausible(self) -> None:
        """The bound is inclusive: a report at exactly twice the allocatable is believed."""
        usage = _judge(_report(usage={"cpu": 8.0, "memory": 2**30}, pods=[]), _node(cpu=4000))
        assert not isinstance(usage, Distrusted)

    def test_a_report_from_the_future_is_not_believed(self) -> None:
        """An observedTime more than the allowed skew ahead of the descheduler's clock is a
        lie or a broken clock."""
        report = _report()
        observed = report.observed_time or 0.0
        ahead = judge(report, _node(), now=observed - 61, changed_at=observed - 61)
        assert isinstance(ahead, Distrusted)
        assert ahead.reason == FUTURE
        within = judge(report, _node(), now=observed - 59, changed_at=observed - 59)
        assert not isinstance(within, Distrusted)


def test_judge_all_sorts_believed_and_distrusted_and_counts_every_reason() -> None:
    """Believed reports come back by node, the others by name with a count for each
    reason (zero where none), for the metric."""
    good = _report()
    stranger = project({**_document(), "metadata": {"name": "node-z"}})
    verdicts = judge_all([(good, NOW, True), (stranger, NOW, True)], {"node-a": _node()}, NOW)
    assert sorted(verdicts.usage) == ["node-a"]
    assert sorted(verdicts.distrusted) == ["node-z"]
    assert verdicts.counts() == {
        NO_NODE: 1,
        NOT_OWNED: 0,
        INVALID: 0,
        IMPLAUSIBLE: 0,
        FUTURE: 0,
    }
