"""Which swap capacity the expected limits use (kubelet's, else SwapTotal), and the refusal
to enforce while kubelet's capacity and the node's swap disagree."""

import json
import re

import pytest
from prometheus_client import CollectorRegistry

from agent.config.swap import MemorySwapConfig
from agent.node.cgroups import CgroupFacts, CgroupMode
from agent.node.containercgroups import CgroupReading, KubepodsScan
from agent.node.kubepods import PodQOSDir
from agent.node.memory import MemoryFacts
from agent.node.tmpfs import NoswapSupport
from agent.swap.audit import AuditReport, CapacitySource, build_report, enforce_plan
from agent.swap.collector import AuditStats, SwapAuditCollector
from agent.swap.render import render_json, render_table
from agent.swap.summary import node_summary, report_warnings
from tests.harness.cgroups import GIB, ContainerFixture, container_id, pod_object

UID = "00000000-0000-4000-8000-000000000001"
SWAP_TOTAL = 4 * GIB


def audit(kubelet_capacity: int | None, mode: CgroupMode = CgroupMode.V2) -> AuditReport:
    """One Burstable 1Gi/2Gi container at ``max`` on a 16 GiB node with 4 GiB of swap."""
    memory = MemoryFacts(16 * GIB, 8 * GIB, SWAP_TOTAL, SWAP_TOTAL, 0, 0, ())
    scan = KubepodsScan(None, "kubepods.slice")
    summary = node_summary(
        MemorySwapConfig(swap_behavior="LimitedSwap"),
        memory=memory,
        cgroups=CgroupFacts(mode, True, "/"),
        noswap=NoswapSupport(True, "kernel >= 6.4"),
        scan=scan,
        page_size=4096,
        kubelet_capacity=kubelet_capacity,
    )
    pod = pod_object(
        "web", UID, ContainerFixture("app", container_id(1), {"memory": "1Gi"}, {"memory": "2Gi"})
    )
    reading = CgroupReading(
        "k/web/app", PodQOSDir.BURSTABLE, UID, container_id(1), "crio", "max", 0
    )
    scan = KubepodsScan(None, "kubepods.slice", (reading,))
    return build_report(summary, [pod], scan)


@pytest.mark.parametrize(
    ("kubelet_capacity", "source", "expected"),
    [
        pytest.param(None, CapacitySource.MEMINFO, 268435456, id="not-reported-uses-swaptotal"),
        pytest.param(SWAP_TOTAL, CapacitySource.KUBELET, 268435456, id="reported-and-equal"),
        pytest.param(2 * GIB, CapacitySource.KUBELET, 134217728, id="kubelet-saw-less-swap"),
        pytest.param(8 * GIB, CapacitySource.KUBELET, 536870912, id="kubelet-saw-more-swap"),
        pytest.param(0, CapacitySource.KUBELET, 0, id="kubelet-saw-no-swap"),
    ],
)
def test_expected_limits_use_kubelets_capacity_when_the_node_reports_it(
    kubelet_capacity: int | None, source: CapacitySource, expected: int
) -> None:
    """kubelet computes from the swap it read at start-up; without it, from SwapTotal."""
    report = audit(kubelet_capacity)
    (row,) = report.containers
    assert row.expected.bytes == expected
    assert report.summary.capacity_source is source
    assert report.summary.node.swap_capacity_bytes == (
        SWAP_TOTAL if kubelet_capacity is None else kubelet_capacity
    )


@pytest.mark.parametrize(
    ("kubelet_capacity", "mismatch"),
    [
        pytest.param(None, False, id="not-reported"),
        pytest.param(SWAP_TOTAL, False, id="equal"),
        pytest.param(2 * GIB, True, id="swap-grew-after-kubelet-started"),
        pytest.param(0, True, id="swap-turned-on-after-kubelet-started"),
    ],
)
def test_enforcement_plans_nothing_while_the_capacities_disagree(
    kubelet_capacity: int | None, mismatch: bool
) -> None:
    """A drifted container is written only while kubelet's capacity is the node's SwapTotal."""
    report = audit(kubelet_capacity)
    assert report.summary.capacity_mismatch is mismatch
    assert len(report.drifted) == 1
    assert len(enforce_plan(report)) == (0 if mismatch else 1)
    refusal = report.summary.enforce_refusal
    assert (refusal is not None) is mismatch
    if mismatch:
        assert f"differs from SwapTotal ({SWAP_TOTAL} bytes)" in str(refusal)


def test_no_cgroup_v2_refuses_enforcement_with_its_own_reason() -> None:
    """Where kubelet sets no swap limits (cgroup v1), the plan is empty and says why."""
    report = audit(None, CgroupMode.HYBRID)
    assert enforce_plan(report) == ()
    assert "needs cgroup v2" in str(report.summary.enforce_refusal)


def test_report_names_the_source_and_the_refusal() -> None:
    """``swap report`` shows both capacities, which one is used, and that enforcing is off."""
    report = audit(2 * GIB)
    warnings = report_warnings(report)
    table = render_table(report, warnings)
    assert "from kubelet (status.nodeInfo.swap.capacity)" in table
    assert re.search(rf"SwapTotal +{SWAP_TOTAL} \(4Gi\)", table)
    assert re.search(r"enforcement +refused: kubelet's swap capacity", table)
    assert any("memorySwap.enforce writes nothing" in warning for warning in warnings)
    node = json.loads(render_json(report, warnings))["node"]
    assert (
        node["swap_capacity_bytes"],
        node["swap_capacity_source"],
        node["swap_total_bytes"],
        node["kubelet_swap_capacity_bytes"],
        node["swap_capacity_mismatch"],
    ) == (2 * GIB, "kubelet", SWAP_TOTAL, 2 * GIB, True)
    assert "differs from SwapTotal" in node["enforce_refusal"]


@pytest.mark.parametrize(
    ("kubelet_capacity", "mismatch", "source"),
    [
        pytest.param(None, 0, "meminfo", id="not-reported"),
        pytest.param(SWAP_TOTAL, 0, "kubelet", id="equal"),
        pytest.param(2 * GIB, 1, "kubelet", id="mismatch"),
    ],
)
def test_metrics_show_the_mismatch_and_the_source(
    kubelet_capacity: int | None, mismatch: int, source: str
) -> None:
    """kubelet_companion_swap_capacity_mismatch is 0/1; the source is an info series."""
    registry = CollectorRegistry()
    report = audit(kubelet_capacity)
    registry.register(SwapAuditCollector(lambda: report, AuditStats))
    assert registry.get_sample_value("kubelet_companion_swap_capacity_mismatch") == mismatch
    assert (
        registry.get_sample_value("kubelet_companion_swap_capacity_source_info", {"source": source})
        == 1
    )
