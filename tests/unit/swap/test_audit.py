"""The audit core: matching cgroups to containers, drift, page rounding and the write plan."""

from dataclasses import replace

import pytest

from agent.node.containercgroups import CgroupReading, KubepodsScan, SwapMax
from agent.node.kubepods import PodQOSDir
from agent.swap.audit import DriftState, build_report, enforce_plan, in_sync
from tests.harness.cgroups import GIB, ContainerFixture, container_id, pod_object
from tests.unit.swap.node_summary import V2_LIMITED_SWAP_NODE

SUMMARY = V2_LIMITED_SWAP_NODE
UID = "11111111-2222-3333-4444-555555555555"
BURSTABLE = ContainerFixture("app", container_id(1), {"memory": "1Gi"}, {"memory": "2Gi"})


def reading(uid: str, cid: str, swap_max: SwapMax, usage: int | None = 0) -> CgroupReading:
    return CgroupReading(
        path=f"kubepods.slice/x-pod{uid}.slice/cri-containerd-{cid}.scope",
        qos=PodQOSDir.BURSTABLE,
        pod_uid=uid,
        container_id=cid,
        runtime="cri-containerd",
        swap_max=swap_max,
        swap_current=usage,
    )


def scan(*readings: CgroupReading) -> KubepodsScan:
    return KubepodsScan(driver=None, root="kubepods.slice", containers=readings)


def test_in_sync_accepts_the_page_aligned_value_the_kernel_reads_back() -> None:
    """Writing N stores whole pages: N rounded down to 4096 is in sync, anything else is not."""
    assert in_sync(268435456, 268435456, 4096)
    assert in_sync(1073737728, 1073741823, 4096)
    assert not in_sync(1073737728 - 4096, 1073741823, 4096)
    assert not in_sync("max", 0, 4096)
    assert not in_sync(None, 0, 4096)


def test_matching_cgroup_in_sync_is_ok() -> None:
    """The expected 268435456 read back from the cgroup is no drift."""
    report = build_report(
        SUMMARY, [pod_object("p", UID, BURSTABLE)], scan(reading(UID, container_id(1), 268435456))
    )
    (row,) = report.containers
    assert (row.state, row.expected.bytes, row.actual) == (DriftState.OK, 268435456, 268435456)
    assert report.drifted == ()


def test_unlimited_or_different_limit_is_drift() -> None:
    """``max`` where kubelet would set a number, or a different number, is drift."""
    pods = [pod_object("p", UID, BURSTABLE, ContainerFixture("side", container_id(2)))]
    report = build_report(
        SUMMARY,
        pods,
        scan(reading(UID, container_id(1), "max"), reading(UID, container_id(2), 4096)),
    )
    assert [(row.container, row.state, row.expected.bytes) for row in report.containers] == [
        ("app", DriftState.DRIFT, 268435456),
        ("side", DriftState.DRIFT, 0),
    ]
    assert len(report.drifted) == 2


def test_missing_swap_file_is_unknown_and_missing_cgroup_is_no_cgroup() -> None:
    """No memory.swap.max is not drift; a container without a cgroup is just listed."""
    pods = [pod_object("p", UID, BURSTABLE, ContainerFixture("waiting", None))]
    report = build_report(SUMMARY, pods, scan(reading(UID, container_id(1), None)))
    assert [row.state for row in report.containers] == [DriftState.UNKNOWN, DriftState.NO_CGROUP]
    assert enforce_plan(report) == ()


def test_cgroups_nobody_claims_are_unmapped_and_never_planned() -> None:
    """A sandbox or a stray cgroup is reported as unmapped and never written."""
    stray = reading("99999999-0000-0000-0000-000000000000", container_id(9), "max")
    report = build_report(SUMMARY, [], scan(stray))
    assert [cgroup.container_id for cgroup in report.unmapped] == [container_id(9)]
    assert enforce_plan(report) == ()


def test_a_container_id_under_another_pods_uid_does_not_match() -> None:
    """Matching needs both the pod UID and the container ID."""
    other = "aaaaaaaa-0000-0000-0000-000000000000"
    report = build_report(
        SUMMARY, [pod_object("p", UID, BURSTABLE)], scan(reading(other, container_id(1), "max"))
    )
    assert report.containers[0].state is DriftState.NO_CGROUP
    assert len(report.unmapped) == 1


def test_crafted_uid_and_container_id_match_nothing_and_plan_nothing() -> None:
    """``../../system.slice`` as a UID or container ID cannot reach the write plan."""
    evil = pod_object(
        "evil",
        "../../system.slice",
        ContainerFixture("x", None, {"memory": "1Gi"}, {"memory": "2Gi"}),
    )
    evil["status"]["containerStatuses"][0]["containerID"] = "containerd://../../system.slice"
    report = build_report(SUMMARY, [evil], scan(reading(UID, container_id(1), "max")))
    assert report.containers[0].cgroup is None
    assert enforce_plan(report) == ()


def test_static_pod_matches_through_its_mirror_annotation() -> None:
    """A static pod's cgroup carries the manifest hash, which the mirror pod annotates."""
    mirror = pod_object(
        "etcd-node",
        "mirror-uid",
        BURSTABLE,
        annotations={
            "kubernetes.io/config.mirror": "f" * 32,
            "kubernetes.io/config.source": "file",
        },
    )
    report = build_report(SUMMARY, [mirror], scan(reading("f" * 32, container_id(1), "max")))
    (row,) = report.containers
    assert (row.state, row.expected.bytes, row.expected.reason) == (
        DriftState.DRIFT,
        0,
        "critical pod (mirror pod)",
    )


def test_terminal_pods_are_left_out() -> None:
    """Succeeded and Failed pods have no containers to audit."""
    done = pod_object("done", UID, BURSTABLE, phase="Succeeded")
    assert build_report(SUMMARY, [done], scan()).containers == ()


def test_plan_writes_expected_values_for_drifted_containers_only() -> None:
    """Enforcement is exactly the drifted rows, with their expected bytes and cgroups."""
    pods = [pod_object("p", UID, BURSTABLE, ContainerFixture("side", container_id(2)))]
    report = build_report(
        SUMMARY,
        pods,
        scan(reading(UID, container_id(1), "max"), reading(UID, container_id(2), 0)),
    )
    (write,) = enforce_plan(report)
    assert (write.container, write.value, write.previous) == ("app", 268435456, "max")
    assert write.path.endswith(f"cri-containerd-{container_id(1)}.scope")


def test_noswap_behavior_expects_zero_everywhere() -> None:
    """With NoSwap kubelet writes 0 for every container; ``max`` is drift."""
    summary = replace(SUMMARY, node=replace(SUMMARY.node, behavior="NoSwap"))
    report = build_report(
        summary, [pod_object("p", UID, BURSTABLE)], scan(reading(UID, container_id(1), "max"))
    )
    assert [(r.expected.bytes, r.state) for r in report.containers] == [(0, DriftState.DRIFT)]


def test_report_json_carries_rows_and_node_summary() -> None:
    """The JSON form names every column of the table and the node summary."""
    report = build_report(
        SUMMARY, [pod_object("p", UID, BURSTABLE)], scan(reading(UID, container_id(1), "max", 5))
    )
    data = report.as_json()
    assert data["drifted_containers"] == 1
    row = data["containers"][0]
    assert (row["qos"], row["memory_request_bytes"], row["memory_limit_bytes"]) == (
        "Burstable",
        GIB,
        2 * GIB,
    )
    assert (row["expected_bytes"], row["actual"], row["usage_bytes"], row["state"]) == (
        268435456,
        "max",
        5,
        "drift",
    )
    assert data["node"]["pods_swap_available_bytes"] == 4 * GIB


def resized(pod: dict[str, object], status: dict[str, object]) -> dict[str, object]:
    """``pod`` with its spec resized to 2Gi/4Gi and ``status`` merged into its container's."""
    container = pod["spec"]["containers"][0]  # type: ignore[index]
    container["resources"] = {"requests": {"memory": "2Gi"}, "limits": {"memory": "4Gi"}}
    pod["status"]["containerStatuses"][0].update(status)  # type: ignore[index]
    return pod


@pytest.mark.parametrize(
    "status",
    [
        pytest.param(
            {"allocatedResources": {"memory": "1Gi"}},
            id="resize-not-yet-allocated",
        ),
        pytest.param(
            {
                "allocatedResources": {"memory": "1Gi"},
                "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}},
            },
            id="resize-infeasible-allocation-unchanged",
        ),
        pytest.param(
            {"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}},
            id="only-actuated-resources-reported",
        ),
    ],
)
def test_resized_pod_is_judged_by_its_allocated_resources(status: dict[str, object]) -> None:
    """A spec resized to 2Gi while kubelet still holds 1Gi is in sync at 268435456."""
    pod = resized(pod_object("p", UID, BURSTABLE), status)
    report = build_report(SUMMARY, [pod], scan(reading(UID, container_id(1), 268435456)))
    (row,) = report.containers
    assert (row.memory_request, row.expected.bytes, row.state) == (
        GIB,
        268435456,
        DriftState.OK,
    )
    assert enforce_plan(report) == ()


def test_allocated_resize_is_what_kubelet_computes_from() -> None:
    """Once kubelet allocated 2Gi, 2Gi/16Gi*4Gi is expected and the old value is drift."""
    status = {"allocatedResources": {"memory": "2Gi"}}
    pod = resized(pod_object("p", UID, BURSTABLE), status)
    report = build_report(SUMMARY, [pod], scan(reading(UID, container_id(1), 268435456)))
    (row,) = report.containers
    assert (row.expected.bytes, row.state) == (536870912, DriftState.DRIFT)
