"""Our taint record kept in step with our taints, against the fake API server.

``TaintActions`` and the trackers write through ``RecordedTaints``: the record on the Lease
first, then the node; the node first, then the record. These tests pin what happens when a
step fails: no taint goes on that is not recorded, no entry outlives its taint for good, no
taint someone else owns is touched, and an adopted rescue ends when the record says.
"""

from __future__ import annotations

from typing import Any

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.live.emptying import EmptyingTracker
from agent.descheduler.live.recordedtaints import RecordedTaints
from agent.descheduler.live.taintactions import RescueTracker, TaintActions
from agent.descheduler.model.taintrecord import RecordedTaint, TaintRecord
from agent.descheduler.plan.shape import TaintChange
from agent.kube.client import AsyncKube
from agent.kube.events import ObjectRef
from agent.kube.lease import KubeLeaseApi
from agent.kube.leaseannotations import LeaseAnnotations
from agent.kube.ownedtaints import OwnedTaints
from agent.kubesemantics.nodekeys import EMPTYING_ANNOTATION, RESCUE_ANNOTATION
from agent.kubesemantics.taintownership import OwnedTaint, emptying_taint, rescue_taint
from tests.harness.deschedulerstate import node, pod
from tests.harness.fake_apiserver import FakeApiServer
from tests.integration.descheduler.conftest import left_in_flight, recorded_taints, taint_record

ADDON = "kube-system/dns"
THEIRS = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}


class _Events:
    """An ``EventSink`` that keeps what it is given."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str]] = []

    async def emit(
        self,
        involved: ObjectRef,
        event_type: str,  # noqa: ARG002 - the EventSink signature
        reason: str,
        message: str,  # noqa: ARG002 - the EventSink signature
        *,
        min_interval: float = 0.0,  # noqa: ARG002 - the EventSink signature
    ) -> bool:
        self.posted.append((involved.name, reason))
        return True


def _actions(taints: RecordedTaints, now: list[float]) -> TaintActions:
    return TaintActions(
        taints,
        RescueTracker(taints, lambda: now[0]),
        _Events(),
        rescue_timeout=600,
        lookup=lambda _key: None,
        now=lambda: 1_800_000_000.0 + now[0],
    )


def _change(owned: OwnedTaint, node_name: str, *, add: bool = True, pod: str = "") -> TaintChange:
    return TaintChange.of(
        owned, node_name, add=add, plugin="test", profile="p", reason="test", for_pod=pod
    )


def _taints(server: FakeApiServer, name: str) -> list[dict[str, Any]]:
    return list(server.get("nodes", name)["spec"].get("taints") or [])


def _node_patches(server: FakeApiServer) -> list[str]:
    return [r.path for r in server.requests(method="PATCH", path_contains="/api/v1/nodes/")]


async def test_a_record_that_cannot_be_written_adds_no_taint(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """The Lease refuses our write: no node is patched, the rescue counts as failed (its
    evictions are not sent), and no emptying taint is tracked."""
    for name in ("a", "b"):
        fake_apiserver.create(node(name))
    fake_apiserver.faults.add(None, r"/leases", status=403, times=None)
    actions = _actions(recorded_taints(async_kube), [0.0])
    changes = [_change(rescue_taint(ADDON), "a", pod=ADDON), _change(emptying_taint(), "b")]
    assert await actions.apply(changes) == {"a"}
    assert _node_patches(fake_apiserver) == []
    assert not actions.tracker.pending
    assert not actions.emptying.pending


async def test_a_record_that_would_grow_too_large_adds_no_taint(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """A record past its bound is not written, so its taints are not added either."""
    fake_apiserver.create(node("a"))
    taints = RecordedTaints(
        OwnedTaints(async_kube),
        LeaseAnnotations(KubeLeaseApi(async_kube, "kube-system", "descheduler")),
        max_bytes=40,
    )
    actions = _actions(taints, [0.0])
    assert await actions.apply([_change(rescue_taint(ADDON), "a", pod=ADDON)]) == {"a"}
    assert _node_patches(fake_apiserver) == []
    assert not fake_apiserver.exists("leases", "descheduler", "kube-system")


async def test_a_taint_someone_else_put_in_the_slot_stays_and_our_claim_goes(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """Someone else's ``CriticalAddonsOnly`` taint where ours would go: the rescue fails,
    their taint stays as it is, and the entry recorded before the try is forgotten."""
    fake_apiserver.create(node("a", taints=[THEIRS]))
    actions = _actions(recorded_taints(async_kube), [0.0])
    assert await actions.apply([_change(rescue_taint(ADDON), "a", pod=ADDON)]) == {"a"}
    assert _taints(fake_apiserver, "a") == [THEIRS]
    assert len(taint_record(fake_apiserver)) == 0


async def test_the_entry_is_written_before_the_taint_and_holds_the_rescues_end(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """The Lease write comes before the node patch, and the entry names the add-on and the
    end of its rescue (now plus the timeout, on the wall clock) for whoever leads next."""
    fake_apiserver.create(node("a"))
    actions = _actions(recorded_taints(async_kube), [0.0])
    assert await actions.apply([_change(rescue_taint(ADDON), "a", pod=ADDON)]) == set()
    lease_writes = [
        r for r in fake_apiserver.requests(path_contains="/leases") if r.method in {"POST", "PUT"}
    ]
    patches = fake_apiserver.requests(method="PATCH", path_contains="/api/v1/nodes/")
    assert lease_writes[-1].monotonic < patches[0].monotonic
    entry = taint_record(fake_apiserver).get(RESCUE_ANNOTATION, "a")
    assert entry == RecordedTaint("kube-system_dns", 1_800_000_600.0, ADDON)
    assert actions.tracker.pending


async def test_an_entry_left_by_a_failed_record_write_is_dropped_by_the_next_sweep(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """The taint comes off but the Lease refuses to forget it: the entry stays (its taint
    is gone, so it says nothing). The next sweep finds nothing on the node to remove,
    patches nothing, and drops the entry."""
    fake_apiserver.create(node("b"))
    await left_in_flight(async_kube, "b", emptying_taint())
    taints = recorded_taints(async_kube)
    tracker = EmptyingTracker(taints, lambda: 0.0)
    tracker.added("b")
    rule = fake_apiserver.faults.add("PUT", r"/leases/descheduler$", status=403, times=None)
    assert await tracker.close() == ["b"]
    assert _taints(fake_apiserver, "b") == []
    assert taint_record(fake_apiserver).get(EMPTYING_ANNOTATION, "b") is not None
    fake_apiserver.faults.remove(rule)
    patches = len(_node_patches(fake_apiserver))
    sweeper = EmptyingTracker(recorded_taints(async_kube), lambda: 0.0)
    assert await sweeper.remove_leftovers(taint_record(fake_apiserver)) == ["b"]
    assert len(_node_patches(fake_apiserver)) == patches
    assert len(taint_record(fake_apiserver)) == 0


async def test_an_adopted_rescue_ends_when_the_record_says(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """A rescue taken over from the record, whose add-on still waits, keeps its taint until
    the end the record gives it (measured from the wall clock then on the monotonic one),
    then it goes with its entry."""
    fake_apiserver.create(node("c"))
    wall = 1_800_000_000.0
    entry = RecordedTaint("kube-system_dns", wall + 100, ADDON)
    await left_in_flight(async_kube, "c", rescue_taint(ADDON), entry)
    now = [5.0]
    taints = recorded_taints(async_kube)
    tracker = RescueTracker(taints, lambda: now[0])
    record = await taints.load()
    assert tracker.adopt(record, wall) == ["c"]
    assert tracker.adopt(record, wall) == []

    waiting = project_pod(pod("dns", None, namespace="kube-system", phase="Pending"))
    assert await tracker.settle(lambda _key: waiting) == []
    now[0] += 99
    assert await tracker.settle(lambda _key: waiting) == []
    now[0] += 1
    assert await tracker.settle(lambda _key: waiting) == ["c"]
    assert _taints(fake_apiserver, "c") == []
    assert taint_record(fake_apiserver) == TaintRecord()
    assert len(taints.record) == 0


async def test_a_taint_that_cannot_be_taken_off_stays_in_the_record(
    fake_apiserver: FakeApiServer, async_kube: AsyncKube
) -> None:
    """The node refuses the removal: the taint stays, and so does its entry, so the next
    leader still knows it is ours; once the node allows it, both go."""
    fake_apiserver.create(node("b"))
    await left_in_flight(async_kube, "b", emptying_taint())
    taints = recorded_taints(async_kube)
    rule = fake_apiserver.faults.add("PATCH", r"/api/v1/nodes/b$", status=403, times=None)
    removed, failed = await taints.remove_all([("b", emptying_taint())])
    assert (removed, list(failed)) == ([], ["b"])
    assert taint_record(fake_apiserver).get(EMPTYING_ANNOTATION, "b") is not None
    assert _taints(fake_apiserver, "b") != []
    fake_apiserver.faults.remove(rule)
    assert await taints.remove_all([("b", emptying_taint())]) == (["b"], {})
    assert _taints(fake_apiserver, "b") == []
    assert len(taint_record(fake_apiserver)) == 0
