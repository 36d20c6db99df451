"""HighNodeUtilization's emptying taints end to end against the fake API server, over the
official client.

Node ``sparse`` holds two pods of the ReplicaSet ``web``; ``dense`` is well used. The
descheduler puts ``kubelet-companion.io/emptying:PreferNoSchedule`` (and our annotation) on
``sparse`` before it evicts anything there, recorded on its Lease first; the test stands in
for the ReplicaSet controller and the scheduler by creating bound replacements, and the taint
goes once both are bound. A taint a killed run left goes at the next start only if our record
holds it (a node's mark alone is anyone's); a replacement that never comes keeps the taint on
only for the hold; a graceful stop takes it off, also in mid-cycle.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.live.emptying import EmptyingTracker
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kubesemantics.nodekeys import EMPTYING_ANNOTATION
from agent.kubesemantics.taintownership import emptying_taint
from agent.kubesemantics.timestamps import rfc3339
from tests.harness.deschedulerstate import node, pdb, pod, snapshot
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import owner_ref
from tests.harness.livedescheduler import FAST_LEASE, run_live
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import left_in_flight, recorded_taints, taint_record

HNU_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: compact
    pluginConfig:
    - name: "HighNodeUtilization"
      args:
        thresholds: {"cpu": 20}
    plugins:
      balance:
        enabled: ["HighNodeUtilization"]
"""
EMPTYING = {
    "key": "kubelet-companion.io/emptying",
    "value": "HighNodeUtilization",
    "effect": "PreferNoSchedule",
}
WEB = owner_ref("ReplicaSet", "web")
DEDICATED = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}


def _web(name: str, node_name: str | None) -> dict[str, Any]:
    return pod(name, node_name, cpu="200m", owner=WEB, labels={"app": "web"})


def _cluster(server: FakeApiServer) -> None:
    """sparse: two 200m pods of ``web`` (10 % of 4 CPUs); dense and db: four 500m pods of
    others each, db with a taint of someone else's."""
    server.create(node("sparse"))
    server.create(node("dense"))
    server.create(node("db", taints=[DEDICATED]))
    for index in range(2):
        server.create(_web(f"web-{index}", "sparse"))
    for host, tolerations in (("dense", []), ("db", [{"key": "dedicated", "operator": "Exists"}])):
        for index in range(4):
            server.create(
                pod(
                    f"{host}-{index}",
                    host,
                    cpu="500m",
                    owner=owner_ref("ReplicaSet", host),
                    tolerations=tolerations,
                )
            )


def _taints(server: FakeApiServer, name: str) -> list[dict[str, Any]]:
    return list(server.get("nodes", name)["spec"].get("taints") or [])


def _annotations(server: FakeApiServer, name: str) -> dict[str, str]:
    return dict(server.get("nodes", name)["metadata"].get("annotations") or {})


def _assert_untainted(server: FakeApiServer, name: str) -> None:
    """Neither our taint nor our annotation is left on the node, nor its entry in our record."""
    assert _taints(server, name) == []
    assert EMPTYING_ANNOTATION not in _annotations(server, name)
    assert taint_record(server).get(EMPTYING_ANNOTATION, name) is None


async def _stop(run: asyncio.Task[int], stop: asyncio.Event) -> int:
    """Stop a running loop gracefully; its exit code."""
    stop.set()
    try:
        return await asyncio.wait_for(run, timeout=20)
    finally:
        run.cancel()


def _node_events(server: FakeApiServer, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in server.list("events", "default")
        if e["involvedObject"].get("kind") == "Node" and e["involvedObject"].get("name") == name
    ]


def _policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(HNU_POLICY)
    return path


def _run(
    kube_api: KubeApi, tmp_path: Path, stop: asyncio.Event | None = None, **options: Any
) -> asyncio.Task[int]:
    return asyncio.create_task(run_live(_policy(tmp_path), kube_api, stop=stop, **options))


async def test_the_node_is_tainted_before_its_pods_go_and_untainted_once_they_are_replaced(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The taint and our annotation land on ``sparse`` before its first eviction, recorded
    on the Lease before they land; the
    one-shot run waits with the taint on until both replacements are bound (one of them
    first Pending), then removes taint and annotation and exits 0. ``db`` keeps its own.
    (That it waits for bound replacements and no more than the hold: the tracker's test.)"""
    _cluster(fake_apiserver)
    run = _run(kube_api, tmp_path)
    try:
        await wait_until(
            lambda: len(fake_apiserver.requests(method="POST", path_contains="/eviction")) == 2,
            timeout=20,
        )
        patches = fake_apiserver.requests(method="PATCH", path_contains="/api/v1/nodes/")
        evictions = fake_apiserver.requests(method="POST", path_contains="/eviction")
        assert [r.path for r in patches] == ["/api/v1/nodes/sparse"]
        assert patches[0].monotonic < evictions[0].monotonic
        assert EMPTYING in _taints(fake_apiserver, "sparse")
        assert _annotations(fake_apiserver, "sparse")[EMPTYING_ANNOTATION] == "HighNodeUtilization"
        assert taint_record(fake_apiserver).get(EMPTYING_ANNOTATION, "sparse") is not None
        (recorded,) = fake_apiserver.requests(method="PUT", path_contains="/leases/")
        assert recorded.monotonic < patches[0].monotonic
        fake_apiserver.create(_web("web-new-0", "dense"))
        fake_apiserver.create(_web("web-new-1", None))
        fake_apiserver.bind("default", "web-new-1", "dense")
        code = await asyncio.wait_for(run, timeout=20)
    finally:
        run.cancel()
    assert code == 0
    _assert_untainted(fake_apiserver, "sparse")
    assert _taints(fake_apiserver, "db") == [DEDICATED]


async def test_a_graceful_stop_takes_the_taint_off(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A running loop whose replacements have not come yet removes its emptying taint when
    it is stopped, rather than leaving it for the next run."""
    _cluster(fake_apiserver)
    stop = asyncio.Event()
    run = _run(kube_api, tmp_path, descheduling_interval=3600.0, stop=stop)
    try:
        await wait_until(lambda: EMPTYING in _taints(fake_apiserver, "sparse"), timeout=20)
        await wait_until(
            lambda: len(fake_apiserver.requests(method="POST", path_contains="/eviction")) == 2,
            timeout=20,
        )
    finally:
        code = await _stop(run, stop)
    assert code == 0
    _assert_untainted(fake_apiserver, "sparse")


async def test_a_stop_while_evictions_wait_for_their_budget_takes_the_taint_off(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """The taint is tracked from the moment it is added: a stop that comes while the
    cycle's evictions still wait for a budget that never allows them removes it too."""
    _cluster(fake_apiserver)
    fake_apiserver.create(pdb("web", match_labels={"app": "web"}, min_available=2))
    stop = asyncio.Event()
    run = _run(kube_api, tmp_path, descheduling_interval=3600.0, stop=stop)
    try:
        # The taint's Event is queued after the taint lands and before the evictions start.
        await wait_until(lambda: _node_events(fake_apiserver, "sparse"), timeout=20)
        assert EMPTYING in _taints(fake_apiserver, "sparse")
        assert not fake_apiserver.requests(method="POST", path_contains="/eviction")
    finally:
        code = await _stop(run, stop)
    assert code == 0
    _assert_untainted(fake_apiserver, "sparse")


async def test_a_leftover_emptying_taint_goes_at_start_and_an_unrecorded_one_stays(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, async_kube: AsyncKube, tmp_path: Path
) -> None:
    """An emptying taint a killed run left (recorded, and marked on the node) goes at the
    next run's first cycle, with its mark and its entry. The same taint on a node without
    our mark is someone else's and stays; so does one whose node carries our mark that our
    record does not hold (any node may write its own annotations): taint and mark."""
    fake_apiserver.create(node("left", taints=[DEDICATED]))
    await left_in_flight(async_kube, "left", emptying_taint())
    fake_apiserver.create(node("theirs", taints=[EMPTYING]))
    fake_apiserver.create(_forged("forged"))
    code = await asyncio.wait_for(_run(kube_api, tmp_path), timeout=20)
    assert code == 0
    assert _taints(fake_apiserver, "left") == [DEDICATED]
    assert EMPTYING_ANNOTATION not in _annotations(fake_apiserver, "left")
    assert _taints(fake_apiserver, "theirs") == [EMPTYING]
    _assert_forged_untouched(fake_apiserver, "forged")
    assert len(taint_record(fake_apiserver)) == 0


async def test_the_next_leader_takes_an_emptying_taint_in_flight_off(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, async_kube: AsyncKube, tmp_path: Path
) -> None:
    """A leader that emptied ``sparse`` is gone without a graceful stop: its taint and its
    record on the Lease stay, and the Lease is still held for a second. The replica that
    takes the Lease over reads the record and takes the taint off at its first cycle (with
    its mark and its entry); a node's unrecorded mark stays as it is."""
    fake_apiserver.create(node("sparse"))
    fake_apiserver.create(node("dense"))
    await left_in_flight(async_kube, "sparse", emptying_taint())
    fake_apiserver.create(_forged("forged"))
    lease = fake_apiserver.get("leases", "descheduler", "kube-system")
    lease["spec"] = {
        "holderIdentity": "gone-leader",
        "leaseDurationSeconds": 1,
        "acquireTime": rfc3339(time.time(), micros=True),
        "renewTime": rfc3339(time.time(), micros=True),
        "leaseTransitions": 0,
    }
    fake_apiserver.update(lease)
    stop = asyncio.Event()
    run = _run(
        kube_api, tmp_path, stop, descheduling_interval=3600.0, leader_elect=True, **FAST_LEASE
    )
    try:
        await wait_until(lambda: EMPTYING not in _taints(fake_apiserver, "sparse"), timeout=20)
        await wait_until(lambda: not len(taint_record(fake_apiserver)), "the entry gone", 20)
    finally:
        code = await _stop(run, stop)
    assert code == 0
    _assert_untainted(fake_apiserver, "sparse")
    _assert_forged_untouched(fake_apiserver, "forged")


def _forged(name: str) -> dict[str, Any]:
    """A node with an emptying taint and our mark, neither of them in our record."""
    forged = node(name, taints=[EMPTYING])
    forged["metadata"]["annotations"] = {EMPTYING_ANNOTATION: "HighNodeUtilization"}
    return forged


def _assert_forged_untouched(server: FakeApiServer, name: str) -> None:
    assert _taints(server, name) == [EMPTYING]
    assert _annotations(server, name) == {EMPTYING_ANNOTATION: "HighNodeUtilization"}


@pytest.mark.parametrize(
    ("replacement_node", "deleting", "counts"),
    [(None, False, False), ("dense", True, False), ("dense", False, True)],
    ids=["pending", "bound-but-deleting", "bound"],
)
async def test_without_a_bound_replacement_the_taint_stays_only_for_the_hold(
    fake_apiserver: FakeApiServer,
    async_kube: AsyncKube,
    replacement_node: str | None,
    deleting: bool,
    counts: bool,
) -> None:
    """A replacement that stays Pending, or is bound but already terminating, keeps the
    taint on until the hold is over, never longer; a bound one ends it at once. The pod
    cache's events say so (here fed by hand), and a relist makes the tracker look again."""
    fake_apiserver.create(node("sparse"))
    now = [100.0]
    tracker = EmptyingTracker(recorded_taints(async_kube), lambda: now[0], hold_seconds=60)
    await left_in_flight(async_kube, "sparse", emptying_taint())
    tracker.added("sparse")
    evicted = _web("web-0", "sparse")
    tracker.track([project_pod(evicted)], snapshot(node("sparse"), evicted))
    body = _web("web-new", replacement_node)
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    replacement = project_pod(body)
    tracker.on_pod_event("SYNCED", None)
    removed = await tracker.settle(lambda: [replacement])
    if not counts:
        assert removed == []
        assert _taints(fake_apiserver, "sparse") == [EMPTYING]
        now[0] += 60
        removed = await tracker.settle(lambda: [replacement])
    assert removed == ["sparse"]
    _assert_untainted(fake_apiserver, "sparse")
    assert not tracker.pending


async def test_a_taint_that_could_not_be_added_is_not_waited_for(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A node patch the server refuses costs the steering only: the node's pods are still
    evicted, and the one-shot run ends without waiting for a taint that is not there."""
    _cluster(fake_apiserver)
    fake_apiserver.faults.add("PATCH", r"/api/v1/nodes/sparse$", status=403, times=None)
    code = await asyncio.wait_for(_run(kube_api, tmp_path), timeout=20)
    assert code == 0
    assert len(fake_apiserver.requests(method="POST", path_contains="/eviction")) == 2
    assert _taints(fake_apiserver, "sparse") == []
