"""A pod bound to the node during a shutdown is stopped in its own priority's phase, or in the
running one when its own has passed, and counted under its own bucket, never the phase's.

A scheduler that has not seen the taint yet, or a pod that tolerates it, can still put a pod
on the node after PrepareForShutdown. The agent stops it as soon as its pod watch shows it
(not only once the phase's other pods are gone), logs it as a late pod and counts it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import structlog

from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import NODE, ShutdownRig, until

pytestmark = pytest.mark.root

CRITICAL = 2_000_000_000
BUCKETS = [(0, 6), (CRITICAL, 6)]
TERMINATED = "kubelet_companion_shutdown_pods_terminated_total"
LATE = "kubelet_companion_shutdown_pods_arrived_late_total"


def deleted(rig: ShutdownRig, name: str) -> bool:
    return any(d.path.endswith(f"/pods/{name}") for d in rig.pod_deletions())


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 20}], indirect=True)
@pytest.mark.parametrize("arrives", ["in-its-own-phase", "after-its-own-phase"])
async def test_a_pod_bound_during_the_shutdown_is_stopped_at_once_and_counted_as_its_own(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any], arrives: str
) -> None:
    """A priority-0 pod bound while phase 0 runs joins phase 0; bound while the critical
    phase runs, it joins that one (with that phase's grace at most). Either way its delete
    goes out while the phase's own pod still terminates, its result and its late arrival
    count under priority 0, and a "late pod" line names it, its priority and the phase."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(
        buckets=BUCKETS,
        pods=[pod("web", grace_seconds=30), pod("dns", priority=CRITICAL, grace_seconds=30)],
        time_scale=0.1,  # a pod is gone a tenth of its grace after its delete
    )
    assert rig.server is not None
    assert rig.kubelet is not None
    holder = "web" if arrives == "in-its-own-phase" else "dns"
    rig.kubelet.stick("default", holder)  # holds its phase open until the test lets it go
    joined = 0 if holder == "web" else CRITICAL
    await rig.wait_for_lock()

    with structlog.testing.capture_logs() as logs:
        await rig.power_off()
        await until(lambda: deleted(rig, holder), 10, f"the delete of {holder}")
        # The scheduler binds a Deployment's replacement pod (priority 0) to the node.
        rig.server.create(pod("replacement", node=None, phase=None))  # unbound, Pending
        rig.server.bind("default", "replacement", NODE)
        await until(lambda: deleted(rig, "replacement"), 5, "the delete of the late pod")
        assert rig.kubelet.removed_at("default", holder) is None  # it did not wait for it
        rig.kubelet.unstick("default", holder)
        await until(lambda: rig.state()["status"] == "finished", 15, "the final record")

    state = rig.state()
    assert state["releasedBy"] == "phases-done"
    assert [(p["priority"], p["pods"]) for p in state["phases"]] == (
        [(0, 2), (CRITICAL, 1)] if joined == 0 else [(0, 1), (CRITICAL, 2)]
    )
    grace = {d.path.rsplit("/", 1)[1]: d.body["gracePeriodSeconds"] for d in rig.pod_deletions()}
    assert grace["replacement"] == 6  # its own bucket's 6 s (and the joined phase's 6 s)
    assert rig.metric(TERMINATED, priority="0", result="gone") == 2
    assert rig.metric(TERMINATED, priority=str(CRITICAL), result="gone") == 1
    assert rig.metric(LATE, priority="0") == 1
    assert rig.metric(LATE, priority=str(CRITICAL)) is None
    late = [e for e in logs if e["event"].startswith("late pod")]
    assert [(e["pod"], e["priority"], e["bucket"], e["phase"], e["own_phase"]) for e in late] == [
        ("default/replacement", 0, 0, joined, joined == 0)
    ]
    assert {"monotonic", "wall", "since_start_seconds"} <= set(late[0])
