"""A node's usage from its NodeReport is settled against the snapshot: pods the report lists
that have left the node (or are leaving) come off its figure, pods started since the report
add their requests; the plugins, and the offline plan on a snapshot file, decide on that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.cache.snapshotfile import load_snapshot
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.core.plugins.nodeutilization.sincereport import Settled, settle
from agent.descheduler.model.cluster import NodeUsage, PodInfo
from agent.descheduler.plan.shape import Plan
from tests.harness.deschedulerstate import NOW, node, pod, policy, snapshot, write_snapshot_file
from tests.harness.kubeobjects import list_document, node_report

LNU = "LowNodeUtilization"
NODE_REPORTS = {
    "thresholds": {"cpu": 20},
    "targetThresholds": {"cpu": 50},
    "metricsUtilization": {"source": "NodeReports"},
}
REPORTED_AT = NOW - 10
"""The reports' time: ten seconds before the snapshot (a report can be 15 s old)."""
BEFORE = "2027-01-15T07:59:40Z"
"""NOW - 20 s: before the reports."""
SINCE = "2027-01-15T07:59:55Z"
"""NOW - 5 s: after the reports."""
GiB = 2**30


def _usage(name: str, cpu: int, pods: dict[str, int], *, memory: int = 0) -> NodeUsage:
    """``name``'s report at ``REPORTED_AT``: node cpu and memory, pods' cpu by pod name."""
    return NodeUsage(
        node=name,
        usage={"cpu": cpu, "memory": memory},
        pod_usage={f"uid-default-{p}": {"cpu": used, "memory": 0} for p, used in pods.items()},
        stale=False,
        shutting_down=False,
        gated=False,
        agent_stopped=False,
        changed_at=REPORTED_AT,
    )


def _pod(name: str, node_name: str = "n", **fields: Any) -> PodInfo:
    return project_pod(pod(name, node_name, **fields))


def _evicted(plan: Plan) -> list[str]:
    return [e.name for e in plan.allowed]


def _facts(plan: Plan, name: str) -> dict[str, Any]:
    (facts,) = [f for f in plan.nodes if f["node"] == name]
    return facts


class TestSettle:
    def test_pods_gone_or_leaving_come_off_and_pods_started_since_are_added(self) -> None:
        """Reported 6000m: ``gone`` (1500m) is no longer on the node and ``leaving`` (1000m)
        is not among the pods that stay, so 6000 - 1500 - 1000 = 3500m; ``new`` started after
        the report, +300m (its requests) = 3800m. ``old`` the report does not list either,
        but it ran before the report: its use is in the 6000m already."""
        report = _usage("n", 6000, {"gone": 1500, "leaving": 1000, "kept": 800}, memory=8 * GiB)
        staying = [
            _pod("kept"),
            _pod("new", cpu="300m", memory="1Gi", start_time=SINCE),
            _pod("old", cpu="700m", start_time=BEFORE),
        ]
        assert settle(report, staying) == Settled(
            usage={"cpu": 3800, "memory": 9 * GiB}, gone=2, started=1
        )

    def test_a_pod_not_started_yet_counts_its_requests(self) -> None:
        """A pod bound but not yet started (no ``startTime``) is not in any report: +250m."""
        unstarted = _pod("fresh", cpu="250m", phase="Pending", start_time=None)
        assert unstarted.start_time is None
        assert settle(_usage("n", 1000, {}), [unstarted]).usage["cpu"] == 1250

    def test_never_below_zero(self) -> None:
        """A report whose pods add up to more than its node figure leaves 0, not less."""
        report = _usage("n", 500, {"gone": 800})
        assert settle(report, []).usage == {"cpu": 0, "memory": 0}

    def test_nothing_changed_is_the_report_as_written(self) -> None:
        """Every listed pod still there and none new: the figure as written, no facts."""
        report = _usage("n", 2400, {"a": 1000, "b": 900})
        settled = settle(report, [_pod("a"), _pod("b")])
        assert settled.usage == {"cpu": 2400, "memory": 0}
        assert settled.facts() == {}


def _hot_after_a_cycle() -> list[dict[str, Any]]:
    """``hot`` (4 CPUs, target 2000m) after the last cycle evicted ``hot-0`` (gone) and
    ``hot-1`` (still terminating); ``hot-2``..``hot-4`` stay. ``cold`` is idle."""
    return [
        node("cold"),
        node("hot"),
        pod("hot-1", "hot", deleting=True),
        *(pod(f"hot-{i}", "hot") for i in (2, 3, 4)),
    ]


HOT_REPORT = _usage(
    "hot", 3600, {"hot-0": 1200, "hot-1": 900, "hot-2": 700, "hot-3": 500, "hot-4": 300}
)
"""Sampled before the last cycle's evictions: 3600m, 900m over the target."""


class TestTheCycleDecidesOnTheSettledFigure:
    def test_pods_evicted_since_the_report_are_not_evicted_for_again(self) -> None:
        """The report still counts ``hot-0`` and ``hot-1`` (2100m): as written, hot is at
        3600m and three more pods would go (700 + 500 + 300, and still over). Settled it is
        at 3600 - 1200 - 900 = 1500m, under its 2000m target: nothing goes."""
        state = snapshot(
            *_hot_after_a_cycle(), node_usage={"hot": HOT_REPORT, "cold": _usage("cold", 0, {})}
        )
        plan = run_cycle(policy((LNU, NODE_REPORTS)), state)
        assert _evicted(plan) == []
        hot = _facts(plan, "hot")
        assert (hot["usage"]["cpu"], hot["category"]) == (1500, "appropriately utilized")
        assert hot["sinceReport"] == {"podsGone": 2, "podsStarted": 0}

    def test_only_what_the_node_still_needs_goes(self) -> None:
        """Reported 4400m with ``hot-0`` and ``hot-1`` (2100m) gone: 2300m, 300m over, so
        one pod goes (the biggest, ``hot-2`` at 700m: 1600m), not the three that 4400m
        would take."""
        report = _usage(
            "hot", 4400, {"hot-0": 1200, "hot-1": 900, "hot-2": 700, "hot-3": 500, "hot-4": 300}
        )
        state = snapshot(
            *_hot_after_a_cycle(), node_usage={"hot": report, "cold": _usage("cold", 0, {})}
        )
        assert _evicted(run_cycle(policy((LNU, NODE_REPORTS)), state)) == ["hot-2"]

    def test_replacements_since_the_report_fill_their_destination(self) -> None:
        """``cold`` reported idle, but four replacements (500m each) started on it since:
        2000m, 50 % of its 4 CPUs, no longer under 20 %, so it is no room and ``hot`` (at
        3600m with nothing gone) keeps its pods. As written, cold would take them."""
        replacements = [pod(f"r-{i}", "cold", cpu="500m", start_time=SINCE) for i in range(4)]
        hot = _usage("hot", 3600, {"hot-2": 1500, "hot-3": 1200, "hot-4": 900})
        state = snapshot(
            node("cold"),
            node("hot"),
            *(pod(f"hot-{i}", "hot") for i in (2, 3, 4)),
            *replacements,
            node_usage={"hot": hot, "cold": _usage("cold", 0, {})},
        )
        plan = run_cycle(policy((LNU, NODE_REPORTS)), state)
        assert _evicted(plan) == []
        cold = _facts(plan, "cold")
        assert (cold["usage"]["cpu"], cold["category"]) == (2000, "appropriately utilized")
        assert cold["sinceReport"] == {"podsGone": 0, "podsStarted": 4}


def _report_document(name: str, cpu: float, pods: dict[str, float]) -> dict[str, Any]:
    listed = [
        {"namespace": "default", "name": p, "uid": f"uid-default-{p}", "cpu": c, "memory": 0}
        for p, c in pods.items()
    ]
    usage = {"cpu": cpu, "memory": 0}
    return node_report(name, "2027-01-15T07:59:50Z", usage=usage, pods=listed)


def test_the_offline_plan_settles_reports_the_same_way(tmp_path: Path) -> None:
    """``descheduler plan`` on a snapshot file and its NodeReports reads the same settled
    figure: ``hot``'s report lists ``hot-0`` (1.2 cores), which the snapshot no longer has,
    so hot is at 3.6 - 1.2 = 2.4 cores, 400m over, and one pod goes (``hot-2``, 0.7), not
    the three that 3.6 cores would take."""
    snapshot_file = write_snapshot_file(
        tmp_path / "s.json",
        list_document(node("cold"), node("hot"), *(pod(f"hot-{i}", "hot") for i in (2, 3, 4))),
    )
    reports = write_snapshot_file(
        tmp_path / "r.json",
        list_document(
            _report_document("hot", 3.6, {"hot-0": 1.2, "hot-2": 0.7, "hot-3": 0.5, "hot-4": 0.3}),
            _report_document("cold", 0.0, {}),
        ),
    )
    loaded = load_snapshot(snapshot_file, now=NOW, node_reports=reports, captured_at=NOW)
    plan = run_cycle(policy((LNU, NODE_REPORTS)), loaded.snapshot)
    assert _evicted(plan) == ["hot-2"]
    assert _facts(plan, "hot")["sinceReport"] == {"podsGone": 1, "podsStarted": 0}
