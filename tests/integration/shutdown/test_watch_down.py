"""A shutdown that starts while the agent's pod watch is down still finds every pod of the node.

The agent plans phases from its watch cache. A pod created while that watch is broken (the
API server unreachable for a moment, the stream cut and its reconnects refused) is not in
the cache; the shutdown must list the node's pods itself rather than end that pod's phase
early and start the next one with the pod still running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import ShutdownRig, until

pytestmark = pytest.mark.root


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 15}], indirect=True)
async def test_a_pod_created_while_the_pod_watch_is_down_is_stopped_in_its_own_phase(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """A pod the watch never delivered is found by a list at shutdown and stopped first."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)  # a real poweroff never returns
    rig: ShutdownRig = await rig_factory(
        buckets=[(0, 5), (1000, 5)],
        pods=[pod("later", priority=1000, grace_seconds=1)],
        time_scale=0.25,
    )
    await rig.wait_for_lock()
    server, kubelet, cluster = rig.server, rig.kubelet, rig.cluster
    assert server is not None
    assert kubelet is not None
    assert cluster is not None
    state = cluster.node_state

    # From now on every pod watch is refused, and the open one is cut.
    refused = server.faults.add("GET", r"/pods$", status=503, times=None, watch=True)
    server.cut_watches()
    await until(lambda: not state.pods_live, 5, "the pod watch down")
    server.create(pod("early", grace_seconds=1))  # phase 0; the agent's cache cannot have it
    assert "default/early" not in state.pods.store

    signalled = await rig.power_off()
    early = await asyncio.to_thread(
        server.wait_for_request,
        lambda r: r.method == "DELETE" and r.path.endswith("/pods/early"),
        10,
    )
    # The delete went out while the watch was still refused: the list found the pod.
    assert not state.pods_live
    assert server.requests(
        "GET",
        predicate=lambda r: (
            r.path == "/api/v1/pods"
            and not r.is_watch
            and r.status == 200
            and r.monotonic >= signalled
        ),
    )
    server.faults.remove(refused)  # the watch resumes and shows the pod gone
    await until(lambda: state.pods_live, 10, "the pod watch back")

    later = await asyncio.to_thread(
        server.wait_for_request,
        lambda r: r.method == "DELETE" and r.path.endswith("/pods/later"),
        15,
    )
    removed = kubelet.removed()
    assert removed[("default", "early")] <= later.monotonic  # phase 1 only after phase 0
    assert early.monotonic <= later.monotonic
    await until(lambda: rig.state()["status"] == "finished", 15, "the final state file")
    assert [(p["priority"], p["status"], p["pods"]) for p in rig.state()["phases"]] == [
        (0, "done", 1),
        (1000, "done", 1),
    ]
