"""How each pod is told to stop: evictions refused for good, kubelet's DisruptionTarget
condition, and calls bounded so that a hung phase never starves the next one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import ShutdownRig, until

pytestmark = pytest.mark.root

DISRUPTION_TARGET = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "TerminationByKubelet",
    "message": "Pod was terminated in response to imminent node shutdown.",
}


def removed(rig: ShutdownRig, *names: str) -> bool:
    """Every named pod has left the node (the fake kubelet saw it through)."""
    assert rig.kubelet is not None
    return all(rig.kubelet.removed_at("default", name) is not None for name in names)


def disruption_condition(rig: ShutdownRig, name: str) -> dict[str, Any] | None:
    assert rig.server is not None
    pod = rig.server.try_get("pods", name, "default") or {}
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
async def test_evictions_refused_for_good_still_end_with_the_pods_gone(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Evict mode: a 403 or a 404 from the eviction is followed by a delete at once, and a pod
    whose delete was refused too is deleted again at its phase deadline."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)

    def refuse(rig: ShutdownRig) -> None:
        assert rig.server is not None
        faults = rig.server.faults
        faults.add("POST", r"/pods/forbidden/eviction$", status=403, times=None)
        faults.add("POST", r"/pods/stubborn/eviction$", status=403, times=None)
        faults.add(
            "POST",
            r"/pods/no-subresource/eviction$",
            status=404,
            times=None,
            message="the server could not find the requested resource",
        )
        faults.add("DELETE", r"/pods/stubborn$", status=403, times=1)

    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 1), (1000, 5)],
        mode="evict",
        pods=[
            pod("stubborn", grace_seconds=1),
            pod("forbidden", priority=1000, grace_seconds=1),
            pod("no-subresource", priority=1000, grace_seconds=1),
        ],
        time_scale=0.05,
        prepare=refuse,
    )
    await rig.wait_for_lock()
    await rig.power_off()
    started = await rig.started_at()
    await until(lambda: removed(rig, "stubborn", "forbidden", "no-subresource"), 10, "all gone")
    await rig.final_state(10)

    # The refused evictions were followed by deletes at once: their phase ended early.
    assert [p["status"] for p in rig.state()["phases"]] == ["timed-out", "done"]
    stubborn = [d for d in rig.pod_deletions() if d.path.endswith("/stubborn")]
    assert [d.status for d in stubborn] == [403, 200]
    assert stubborn[1].monotonic - started >= 1.0  # the second round came at the deadline


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
async def test_deleted_pods_carry_kubelets_disruption_condition(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Delete mode marks each pod DisruptionTarget (TerminationByKubelet) with a status patch."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 2)], pods=[pod("job-pod", grace_seconds=30)], time_scale=0.05
    )
    assert rig.kubelet is not None
    assert rig.server is not None
    rig.kubelet.stick("default", "job-pod")  # keeps the object around to be looked at
    await rig.wait_for_lock()
    await rig.power_off()

    condition = await until(lambda: disruption_condition(rig, "job-pod"), 5, "the condition")
    assert {key: condition[key] for key in DISRUPTION_TARGET} == DISRUPTION_TARGET
    assert condition["lastTransitionTime"].endswith("Z")
    (patch,) = rig.server.requests("PATCH", "/pods/job-pod/status")
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert (
        patch.body["metadata"]["uid"]
        == rig.server.get("pods", "job-pod", "default")["metadata"]["uid"]
    )
    await until(rig.pod_deletions, 5, "the delete")


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
@pytest.mark.parametrize("fault", ["hang", "forbidden"])
async def test_a_failing_status_patch_never_holds_up_the_phase(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any], fault: str
) -> None:
    """With the status patch hanging or refused, the pod is still deleted and the phase ends
    as soon as it is gone."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)

    def break_status_patches(rig: ShutdownRig) -> None:
        assert rig.server is not None
        if fault == "hang":
            rig.server.faults.hang("PATCH", r"/pods/[^/]+/status$", seconds=30, times=None)
        else:
            rig.server.faults.add("PATCH", r"/pods/[^/]+/status$", status=403, times=None)

    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 5)],
        pods=[pod("web", grace_seconds=1)],
        time_scale=0.05,
        prepare=break_status_patches,
    )
    await rig.wait_for_lock()
    await rig.power_off()
    await rig.started_at()
    await rig.final_state(10)
    state = rig.state()
    assert [p["status"] for p in state["phases"]] == ["done"]  # gone before its deadline
    assert state["releasedBy"] == "phases-done"
    assert removed(rig, "web")
    assert rig.server is not None
    rig.server.faults.clear()


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
async def test_unused_time_flows_to_the_next_phase(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Phase 1 empties at once and phase 2 is stuck: phase 2 still ends at start + b1 + b2,
    not b2 after it began, and phase 3 starts then."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 2), (1000, 1), (2000, 2)],
        pods=[
            pod("quick", grace_seconds=1),
            pod("stuck", priority=1000, grace_seconds=30),
            pod("last", priority=2000, grace_seconds=1),
        ],
        time_scale=0.05,
    )
    assert rig.kubelet is not None
    rig.kubelet.stick("default", "stuck")
    await rig.wait_for_lock()
    await rig.power_off()
    started = await rig.started_at()
    await rig.final_state(10)

    phases = rig.state()["phases"]
    assert [p["status"] for p in phases] == ["done", "timed-out", "done"]
    (last,) = [d for d in rig.pod_deletions() if d.path.endswith("/last")]
    assert last.monotonic - started >= 2 + 1  # phase 2's deadline: start + b1 + b2
    assert last.monotonic - started < 2 + 1 + 2  # and phase 3 began inside its own


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
async def test_deletes_hanging_in_one_phase_do_not_starve_the_next(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Deletes that hang past phase 1's deadline free their threads by then (each call is
    bounded by its phase's time left), so phase 2's delete goes out and its phase completes."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    hung = [f"hung-{index}" for index in range(20)]  # more than the 16 API threads

    def hang_phase_one(rig: ShutdownRig) -> None:
        assert rig.server is not None
        rig.server.faults.hang("DELETE", r"/pods/hung-\d+$", seconds=30, times=None)

    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 2), (1000, 4)],
        pods=[*(pod(name, grace_seconds=1) for name in hung), pod("after", priority=1000)],
        time_scale=0.05,
        extra="kube: {requestTimeout: 60s}\n",  # far past the budget: only our bound frees them
        prepare=hang_phase_one,
    )
    await rig.wait_for_lock()
    await rig.power_off()
    started = await rig.started_at()
    assert rig.server is not None
    after = await asyncio.to_thread(
        rig.server.wait_for_request,
        lambda r: r.method == "DELETE" and r.path.endswith("/after"),
        10,
    )
    assert after.monotonic - started < 2 + 4  # inside phase 2, not after a 60 s timeout
    await rig.final_state(10)
    assert [p["status"] for p in rig.state()["phases"]] == ["timed-out", "done"]
    rig.server.faults.clear()
