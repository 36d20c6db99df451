"""Per-container swap series come from the latest audit, so gone containers disappear."""

import math
from dataclasses import replace

from prometheus_client import CollectorRegistry, generate_latest

from agent.node.containercgroups import CgroupReading, KubepodsScan, SwapMax
from agent.node.kubepods import PodQOSDir
from agent.swap.audit import AuditReport, build_report
from agent.swap.collector import AuditStats, SwapAuditCollector
from tests.harness.cgroups import ContainerFixture, container_id, pod_object
from tests.unit.swap.node_summary import V2_LIMITED_SWAP_NODE

SUMMARY = replace(V2_LIMITED_SWAP_NODE, noswap_reason="")


def report_with(*containers: tuple[str, int, SwapMax]) -> AuditReport:
    pods, readings = [], []
    for name, seed, actual in containers:
        uid = f"00000000-0000-0000-0000-{seed:012d}"
        cid = container_id(seed)
        pods.append(
            pod_object(
                name,
                uid,
                ContainerFixture("app", cid, {"memory": "1Gi"}, {"memory": "2Gi"}),
                namespace="ns",
            )
        )
        readings.append(
            CgroupReading(f"k/{name}", PodQOSDir.BURSTABLE, uid, cid, "crio", actual, 1234)
        )
    return build_report(SUMMARY, pods, KubepodsScan(None, None, tuple(readings)))


def scrape(current: list[AuditReport | None]) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(SwapAuditCollector(lambda: current[0], AuditStats))
    return registry


def test_series_carry_kubelet_names_and_labels() -> None:
    """container_swap_usage_bytes / container_swap_limit_bytes{container,pod,namespace}."""
    registry = scrape([report_with(("a", 1, 268435456))])
    labels = {"container": "app", "pod": "a", "namespace": "ns"}
    assert registry.get_sample_value("container_swap_usage_bytes", labels) == 1234
    assert registry.get_sample_value("container_swap_limit_bytes", labels) == 268435456
    assert (
        registry.get_sample_value("kubelet_companion_container_swap_limit_expected_bytes", labels)
        == 268435456
    )
    assert registry.get_sample_value("kubelet_companion_swap_limit_drift_containers") == 0


def test_unlimited_is_infinite_and_counts_as_drift() -> None:
    """``max`` is exported as +Inf and the drift gauge counts it."""
    registry = scrape([report_with(("a", 1, "max"))])
    labels = {"container": "app", "pod": "a", "namespace": "ns"}
    assert math.isinf(registry.get_sample_value("container_swap_limit_bytes", labels) or 0)
    assert registry.get_sample_value("kubelet_companion_swap_limit_drift_containers") == 1


def test_series_of_vanished_containers_disappear() -> None:
    """The next audit without pod b means no series for b at all."""
    current: list[AuditReport | None] = [report_with(("a", 1, 0), ("b", 2, 0))]
    registry = scrape(current)
    assert b'pod="b"' in generate_latest(registry)
    current[0] = report_with(("a", 1, 0))
    assert b'pod="b"' not in generate_latest(registry)


def test_before_the_first_audit_there_are_no_container_series() -> None:
    """No report yet: families exist but carry no container samples."""
    text = generate_latest(scrape([None])).decode()
    assert "container_swap_usage_bytes{" not in text
    assert "kubelet_companion_swap_audits_total" in text
