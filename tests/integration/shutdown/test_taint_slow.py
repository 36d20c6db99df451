"""An API server that is slow with the taint, or refuses it, never costs the pods their phases.

The first pod request waits for the shutting-down taint only briefly (a tenth of the first
phase here, 2 s at most). Past that the phases run as they would, the taint is retried in
the background, and the pods are gone and the lock released within the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import structlog

from agent.shutdown.deadlines import TAINT_WAIT_SHARE
from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import quick_pods
from tests.integration.shutdown.conftest import NODE, ShutdownRig

pytestmark = pytest.mark.root

BUCKETS = [(0, 4), (2_000_000_000, 2)]
PHASE_ENDS = {"web": 4.0, "batch": 4.0, "dns": 6.0}
"""Each pod's phase deadline, in seconds after the signal."""
BUDGET_SECONDS = 6.0


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 15}], indirect=True)
@pytest.mark.parametrize("fault", ["refused", "hangs"])
async def test_a_taint_the_api_server_will_not_store_does_not_hold_up_the_phases(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any], fault: str
) -> None:
    """With every taint patch refused (503) or hanging past the budget, each pod is still
    deleted before its phase deadline and gone before the lock goes, the phases end on
    their own (not at the budget's end), and the agent says the taint was not stored."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(buckets=BUCKETS, pods=quick_pods())
    assert rig.server is not None
    assert rig.kubelet is not None
    await rig.wait_for_lock()
    if fault == "refused":
        rig.server.faults.add("PATCH", rf"/nodes/{NODE}$", status=503, times=None)
    else:
        rig.server.faults.hang("PATCH", rf"/nodes/{NODE}$", seconds=30, times=None)

    with structlog.testing.capture_logs() as logs:
        await rig.power_off()
        start_unit = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=15)
        await rig.final_state()
    started = await rig.started_at()

    state = rig.state()
    assert state["releasedBy"] == "phases-done"
    assert [p["status"] for p in state["phases"]] == ["done", "done"]
    assert start_unit.time - started < BUDGET_SECONDS  # the lock went within the budget
    deletes = {d.path.rsplit("/", 1)[1]: d for d in rig.pod_deletions()}
    assert sorted(deletes) == sorted(PHASE_ENDS)
    for name, phase_end in PHASE_ENDS.items():
        assert deletes[name].monotonic - started < phase_end, name
        removed = rig.kubelet.removed_at("default", name)
        assert removed is not None
        assert removed <= start_unit.time, name
    assert not rig.has_taint()
    assert rig.metric("kubelet_companion_shutdown_started_untainted_total") == 1
    waited = rig.metric("kubelet_companion_shutdown_taint_wait_seconds")
    assert waited is not None
    # It waited, and for the bound at most (a tenth of the first phase), give or take the loop.
    assert waited == pytest.approx(TAINT_WAIT_SHARE * PHASE_ENDS["web"], abs=0.3)
    warnings = [e for e in logs if "taint is not stored yet" in e["event"]]
    assert len(warnings) == 1
    assert warnings[0]["log_level"] == "warning"
