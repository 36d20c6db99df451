"""A whole graceful shutdown against real logind and the fake API server: order, grace, release."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent.kubesemantics.timestamps import parse_rfc3339
from tests.harness.logind import LogindHarness
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import NODE, TAINT_KEY, ShutdownRig, until

pytestmark = pytest.mark.root

BUCKETS = [(0, 2), (1000, 2), (100000, 2)]
PHASES = {
    "low-a": 0,
    "low-b": 0,
    "mid-a": 1,
    "mid-b": 1,
    "high-a": 2,
    "high-b": 2,
}


def six_pods() -> list[dict[str, Any]]:
    return [
        pod("high-b", priority=2_000_000_000, grace_seconds=1),
        pod("low-a", grace_seconds=1),  # no priority: counts as 0
        pod("mid-a", priority=1000, grace_seconds=30),  # the bucket's 2 s wins
        pod("high-a", priority=100000, grace_seconds=5),
        pod("low-b", priority=-10, grace_seconds=3),  # below the lowest bucket: the lowest
        pod("mid-b", priority=99999, grace_seconds=1),
    ]


@pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 15}], indirect=True)
async def test_phases_run_in_order_with_kubelets_grace_and_release_before_the_delay(
    logind_harness: LogindHarness, rig_factory: Callable[..., Any]
) -> None:
    """Phases in order with kubelet's grace; lock released after the last, before the delay."""
    logind_harness.systemd1.configure_jobs(emit_job_removed=False)  # a real poweroff never returns

    def foreign_taint(rig: ShutdownRig) -> None:
        assert rig.server is not None
        rig.server.patch(
            "nodes",
            NODE,
            {"spec": {"taints": [{"key": "example.com/keep-me", "effect": "NoSchedule"}]}},
        )

    rig: ShutdownRig = await rig_factory(
        buckets=BUCKETS, pods=six_pods(), time_scale=0.25, prepare=foreign_taint
    )
    await rig.wait_for_lock()
    # logind lists the lock before the agent has read Inhibit's reply: its gauge and its
    # readiness follow once it has, so they are waited for, not read at once.
    await until(
        lambda: (
            rig.metric("kubelet_companion_inhibitor_lock_held") == 1
            and rig.health.readiness().checks["logind-lock"] is True
        ),
        5,
        "the agent's lock gauge and readiness check",
    )

    signalled = await rig.power_off()
    start_unit = await logind_harness.systemd1.wait_for_call_async("StartUnit", timeout=15)
    assert start_unit.args == ("poweroff.target", "replace-irreversibly")
    assert start_unit.time - signalled < 15  # before InhibitDelayMaxSec

    assert_phase_order_and_grace(rig, start_unit.time)
    await assert_record_and_metrics(rig)
    await assert_taint_and_event(rig)


def assert_phase_order_and_grace(rig: ShutdownRig, lock_released_by: float) -> None:
    """Deletions went out phase by phase with the expected grace; the lock went last."""
    deletions = rig.pod_deletions()
    by_pod = {d.path.rsplit("/", 1)[1]: d for d in deletions}
    assert sorted(by_pod) == sorted(PHASES)
    assert len(deletions) == 6
    assert {name: by_pod[name].body["gracePeriodSeconds"] for name in by_pod} == {
        "high-b": 1,
        "low-a": 1,
        "mid-a": 2,
        "high-a": 2,
        "low-b": 2,
        "mid-b": 1,
    }
    assert all(d.body["preconditions"]["uid"] for d in deletions)
    assert rig.kubelet is not None
    removed = rig.kubelet.removed()
    for name, phase in PHASES.items():
        sent = by_pod[name].monotonic
        earlier = [n for n, p in PHASES.items() if p < phase]
        # A phase starts only once every pod of the phases before it is gone.
        assert all(removed[("default", n)] <= sent for n in earlier), name
    assert lock_released_by >= max(removed.values())  # the lock went after the last phase


async def assert_record_and_metrics(rig: ShutdownRig) -> None:
    await until(lambda: rig.state()["status"] == "finished", 5, "the final state file")
    state = rig.state()
    assert state["bootID"] == "5b1f3c9e-0000-4000-8000-000000000001"
    assert state["releasedBy"] == "phases-done"
    assert [(p["priority"], p["status"], p["pods"], p["terminated"]) for p in state["phases"]] == [
        (0, "done", 2, 2),
        (1000, "done", 2, 2),
        (100000, "done", 2, 2),
    ]
    assert state["startTime"].endswith("Z")
    assert state["endTime"].endswith("Z")
    start = rig.metric("kubelet_companion_graceful_shutdown_start_time_seconds")
    end = rig.metric("kubelet_companion_graceful_shutdown_end_time_seconds")
    assert start is not None
    assert end is not None
    assert 0 < start < end
    assert rig.metric("kubelet_companion_inhibitor_lock_held") == 0
    for phase in state["phases"]:
        priority = str(phase["priority"])
        terminated = rig.metric(
            "kubelet_companion_shutdown_pods_terminated_total", priority=priority, result="gone"
        )
        assert terminated == 2
        duration = rig.metric(
            "kubelet_companion_shutdown_phase_duration_seconds", priority=priority
        )
        recorded = parse_rfc3339(phase["endTime"]) - parse_rfc3339(phase["startTime"])
        assert duration is not None
        assert duration > 0
        assert duration == pytest.approx(recorded, abs=1e-3)  # the metric is the record's


async def assert_taint_and_event(rig: ShutdownRig) -> None:
    await until(rig.has_taint, 5, "the shutting-down taint")
    assert {(t["key"], t["effect"]) for t in rig.taints()} == {
        ("example.com/keep-me", "NoSchedule"),
        (TAINT_KEY, "NoSchedule"),
    }
    assert rig.server is not None
    taint_patches = rig.server.requests("PATCH", f"/nodes/{NODE}")
    assert taint_patches
    assert all(p.body[0]["op"] == "test" for p in taint_patches)  # resourceVersion-guarded
    server = rig.server
    events = await until(
        lambda: [e for e in server.list("events", "default") if e.get("reason") == "Shutdown"],
        5,
        "the Shutdown event",
    )
    assert events[0]["involvedObject"]["kind"] == "Node"
    assert events[0]["message"] == "Shutdown manager detected shutdown event"
