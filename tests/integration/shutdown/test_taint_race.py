"""The shutting-down taint when a cancellation overtakes a taint write still in flight."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import NODE, TAINT_KEY, ShutdownRig, until

pytestmark = pytest.mark.root

HANG_SECONDS = 3.0


def _taint_patches(rig: ShutdownRig, op_present: bool) -> list[Any]:
    """Completed PATCHes of our Node whose new taint list has (or lacks) our taint."""
    assert rig.server is not None

    def has_ours(request: Any) -> bool:
        replaced = [op for op in request.body if op.get("path") == "/spec/taints"]
        return any(t.get("key") == TAINT_KEY for op in replaced for t in op.get("value") or [])

    return [
        request
        for request in rig.server.requests("PATCH", f"/nodes/{NODE}")
        if request.status == 200 and has_ours(request) is op_present
    ]


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 10}], indirect=True)
async def test_cancel_during_a_slow_taint_patch_still_leaves_the_node_untainted(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A cancellation while the add-taint PATCH hangs still ends with the taint removed."""
    logind_harness.systemd1.configure_jobs(result="canceled", delay=0.3)
    rig: ShutdownRig = await rig_factory(buckets=[(0, 2)], pods=[pod("web", grace_seconds=30)])
    assert rig.kubelet is not None
    assert rig.server is not None
    rig.kubelet.stick("default", "web")
    await rig.wait_for_lock()
    rig.server.faults.hang("PATCH", r"/nodes/", seconds=HANG_SECONDS, times=1)

    signalled = await rig.power_off()
    await logind_harness.wait_for_prepare_for_shutdown_async(False, timeout=10, since=signalled)
    await until(lambda: rig.state()["status"] == "cancelled", 5, "the cancelled record")
    # The add was already on the wire when logind cancelled: it lands late, after the
    # cancellation was handled. The removal must come after it, decided on a fresh read.
    await until(lambda: _taint_patches(rig, True), HANG_SECONDS + 5, "the late add to land")
    await until(lambda: not rig.has_taint(), 10, "the taint to be removed after the late add")
    assert _taint_patches(rig, False), "the removal was never sent"
    await rig.wait_for_lock(timeout=5)
