"""The shutting-down taint is stored on the Node before the first pod of a shutdown is touched.

The scheduler may bind a pod to the node until it sees the taint; a pod bound in that window
would be killed seconds after it started. So the first delete of a shutdown (fresh, or
resumed after an agent restart) waits until the API server has stored the taint, and the
order is read from the fake API server itself: its commit of the taint, and the arrival of
every request acting on a pod, in one list (``WriteOrder``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent.config.shutdown import PriorityBucket
from agent.node.statefile import write_json_atomic
from agent.shutdown.record import begin_record
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import quick_pods
from tests.integration.shutdown.conftest import BOOT_ID, NODE, ShutdownRig, WriteOrder, until

pytestmark = pytest.mark.root

BUCKETS = [(0, 10), (2_000_000_000, 5)]
SLOW_PATCH_SECONDS = 0.5


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as started:
        yield started


@pytest.fixture
def order(server: FakeApiServer) -> Iterator[WriteOrder]:
    seen = WriteOrder(server)
    try:
        yield seen
    finally:
        seen.close()


def assert_taint_stored_first(order: WriteOrder) -> None:
    stored, first_pod_write = order.first("taint-stored"), order.first("pod-")
    assert first_pod_write is not None, f"no pod was touched: {order.events}"
    assert stored is not None, f"the taint was never stored: {order.events}"
    assert stored < first_pod_write, f"a pod was touched before the taint: {order.events}"


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 30}], indirect=True)
@pytest.mark.parametrize("answer", ["at-once", "slow", "slow-409"])
async def test_the_taint_is_stored_before_the_first_pod_is_touched(
    logind_harness: LogindHarness,
    rig_factory: Callable[..., Any],
    server: FakeApiServer,
    order: WriteOrder,
    answer: str,
) -> None:
    """On PrepareForShutdown the API server stores the taint before any pod request arrives:
    when it answers at once, when the taint patch takes a moment (a busy API server), and when
    that slow patch meets a 409 (a fresh read, another guarded patch)."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    rig: ShutdownRig = await rig_factory(buckets=BUCKETS, pods=quick_pods(), server=server)
    await rig.wait_for_lock()
    if answer != "at-once":
        # Well inside the time the first delete may wait for the taint here (1 s: a tenth
        # of the first phase).
        server.faults.hang("PATCH", rf"/nodes/{NODE}$", seconds=SLOW_PATCH_SECONDS, times=1)
    if answer == "slow-409":
        server.faults.add("PATCH", rf"/nodes/{NODE}$", status=409, times=1)

    await rig.power_off()
    await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=15)

    assert_taint_stored_first(order)
    assert {d.path.rsplit("/", 1)[1] for d in rig.pod_deletions()} == {"web", "batch", "dns"}
    patches = server.requests("PATCH", f"/nodes/{NODE}")
    assert all(p.body[0] == {**p.body[0], "op": "test"} for p in patches)  # guarded
    if answer == "slow-409":
        assert [p.status for p in patches][:2] == [409, 200]


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 30}], indirect=True)
async def test_a_resumed_shutdown_stores_the_taint_again_before_its_next_delete(
    logind_harness: LogindHarness,
    rig_factory: Callable[..., Any],
    server: FakeApiServer,
    order: WriteOrder,
) -> None:
    """An agent that resumes a shutdown from its state file, on a Node that lost the taint
    meanwhile, has it stored again before it touches a pod (the patch taking a moment)."""
    # A real poweroff job never ends: logind stays "preparing", so the agent resumes.
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)
    since = time.monotonic()
    await asyncio.to_thread(logind_harness.power_off)
    await logind_harness.wait_for_prepare_for_shutdown_async(True, timeout=5, since=since)
    # The agent died mid-shutdown a moment ago (same boot), before the taint landed or
    # after someone removed it: the Node has none, the record says "running".
    record = begin_record(
        [PriorityBucket(p, s) for p, s in BUCKETS],
        start_time=time.time(),
        start_monotonic=time.monotonic(),
        boot_id=BOOT_ID,
        mode="delete",
    )

    def prepare(rig: ShutdownRig) -> None:
        write_json_atomic(rig.config.shutdown_state_file, record.to_json())
        server.faults.hang("PATCH", rf"/nodes/{NODE}$", seconds=SLOW_PATCH_SECONDS, times=1)

    rig: ShutdownRig = await rig_factory(
        buckets=BUCKETS, pods=quick_pods(), server=server, prepare=prepare
    )
    await until(lambda: rig.state()["status"] == "finished", 15, "the resumed run to finish")

    assert not server.requests("POST", "/nodes/")  # sanity: the Node was never replaced
    assert_taint_stored_first(order)
    assert {d.path.rsplit("/", 1)[1] for d in rig.pod_deletions()} == {"web", "batch", "dns"}
