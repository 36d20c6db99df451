"""The run's first pod request waits for the taint to be stored, a bounded time at most."""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry

from agent.shutdown.deadlines import TAINT_WAIT_SHARE
from tests.harness.shutdownpods import pod
from tests.unit.shutdown.test_late_pods import (
    KubeletKube,
    LiveNodeState,
    run_for,
    two_phases,
)


async def test_no_pod_is_deleted_before_the_taint_write_succeeds(tmp_path: Path) -> None:
    """A taint write that takes a moment is waited for: the first delete comes after it."""
    state = LiveNodeState([pod("web", priority=0)])
    order: list[str] = []
    kube = KubeletKube(state, lambda name: order.append(f"delete {name}"))

    async def taint() -> bool:
        # A write that takes a while (real time, no assertion on it): a run that did not
        # wait would delete meanwhile, which the recorded order below shows.
        await asyncio.sleep(0.2)
        order.append("taint stored")
        return True

    run = run_for(tmp_path, state, kube, two_phases())
    run.tainting = asyncio.get_running_loop().create_task(taint())
    with structlog.testing.capture_logs() as logs:
        await asyncio.wait_for(run.start(), 10)
    assert order == ["taint stored", "delete web"]
    assert [e["event"] for e in logs if "taint" in e["event"]] == [
        "shutting-down taint stored; the phases start"
    ]


async def test_a_taint_never_stored_delays_the_first_delete_only_briefly(tmp_path: Path) -> None:
    """A taint write that never ends holds the deletes for a tenth of the phase (20 s here:
    2 s), is left running (never cancelled), and the run counts and logs the start without
    it."""
    state = LiveNodeState([pod("web", priority=0)])
    kube = KubeletKube(state, lambda _name: None)
    registry = CollectorRegistry()
    record = two_phases()
    run = run_for(tmp_path, state, kube, record, registry)
    tainting = asyncio.get_running_loop().create_task(asyncio.Event().wait())
    run.tainting = tainting  # type: ignore[assignment]  # never returns a bool: never ends
    with structlog.testing.capture_logs() as logs:
        await asyncio.wait_for(run.start(), 10)
    assert kube.deleted == ["web"]
    assert not tainting.done()  # still being retried in the background
    tainting.cancel()
    waited = registry.get_sample_value("kubelet_companion_shutdown_taint_wait_seconds")
    assert waited is not None
    assert waited >= TAINT_WAIT_SHARE * 20 - 0.5  # it did wait, not skip the wait
    assert waited <= 2.0 + 1.0  # and it stopped at the bound (give or take a loaded loop)
    assert registry.get_sample_value("kubelet_companion_shutdown_started_untainted_total") == 1
    (warning,) = [e for e in logs if "not stored yet" in e["event"]]
    assert warning["log_level"] == "warning"
