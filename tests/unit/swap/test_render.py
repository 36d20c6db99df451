"""``swap report`` output and warnings: columns, node summary, and the JSON twin."""

import json
from dataclasses import replace

from agent.node.containercgroups import CgroupReading, KubepodsScan, SwapMax
from agent.node.kubepods import PodQOSDir
from agent.swap.audit import AuditReport, NodeSummary, build_report
from agent.swap.render import render_json, render_table
from agent.swap.summary import NOSWAP_EVENT_REASON, kubelet_swap_capacity, report_warnings
from tests.harness.cgroups import GIB, ContainerFixture, container_id, pod_object
from tests.unit.swap.node_summary import V2_LIMITED_SWAP_NODE

SUMMARY = replace(V2_LIMITED_SWAP_NODE, swap_used_bytes=GIB)
UID = "00000000-0000-0000-0000-000000000001"


def report(summary: NodeSummary = SUMMARY, actual: SwapMax = "max") -> AuditReport:
    pod = pod_object(
        "web",
        UID,
        ContainerFixture("app", container_id(1), {"memory": "1Gi"}, {"memory": "2Gi"}),
        namespace="shop",
    )
    reading = CgroupReading(
        "kubepods.slice/x", PodQOSDir.BURSTABLE, UID, container_id(1), "crio", actual, 42
    )
    return build_report(summary, [pod], KubepodsScan(None, None, (reading,)))


def test_table_has_every_column_and_the_node_summary() -> None:
    """QoS, request, limit, expected, actual, usage and drift per container; then the node."""
    text = render_table(report(), [])
    for header in ("QOS", "REQUEST", "LIMIT", "EXPECTED", "ACTUAL", "USAGE", "DRIFT"):
        assert header in text
    assert "pod shop/web" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("app"))
    assert row.split() == [
        "app",
        "regular",
        "Burstable",
        "1Gi",
        "2Gi",
        "268435456",
        "max",
        "42",
        "DRIFT",
    ]
    for fact in ("swap capacity", "swap used", "podsSwapAvailable", "cgroup mode", "tmpfs noswap"):
        assert fact in text


def test_json_is_the_same_report() -> None:
    """--json carries the rows, the node summary and the warnings."""
    data = json.loads(render_json(report(), ["w"]))
    assert data["containers"][0]["state"] == "drift"
    assert data["node"]["pods_swap_available_bytes"] == 4 * GIB
    assert data["warnings"] == ["w"]


def test_warnings_cover_noswap_missing_controller_drift_and_kubelet_capacity() -> None:
    """Each operator-relevant problem becomes one readable line."""
    summary = replace(
        SUMMARY,
        noswap_supported=False,
        node=replace(SUMMARY.node, swap_controller=False),
        kubelet_swap_capacity_bytes=0,
    )
    warnings = report_warnings(report(summary))
    assert any(w.startswith(NOSWAP_EVENT_REASON) for w in warnings)
    assert any("swap controller is missing" in w for w in warnings)
    assert any("kubelet reports 0 bytes of swap" in w for w in warnings)
    assert any("1 container(s)" in w for w in warnings)


def test_in_sync_node_has_no_warnings() -> None:
    """A clean node prints 'none'."""
    assert report_warnings(report(actual=268435456)) == []


def test_kubelet_capacity_comes_from_node_info() -> None:
    """node.status.nodeInfo.swap.capacity, when kubelet reports it."""
    assert kubelet_swap_capacity({"status": {"nodeInfo": {"swap": {"capacity": 5}}}}) == 5
    assert kubelet_swap_capacity({"status": {}}) is None
    assert kubelet_swap_capacity(None) is None
