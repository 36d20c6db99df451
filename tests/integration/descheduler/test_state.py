"""ClusterState's caches against the fake API server: one list per kind, projections only,
pods indexed by node, watches followed, a relist after 410."""

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from agent.descheduler.cache.podlist.projector import PodListProjector
from agent.descheduler.cache.state import PROJECTIONS, ClusterState, Decoding
from agent.descheduler.model.cluster import (
    DisruptionBudget,
    NodeInfo,
    NodeUsage,
    PodInfo,
    WorkloadInfo,
)
from agent.kube.api import KubeApi
from agent.kube.resources import PODS
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import owned_pod


async def _until(check: Callable[[], bool]) -> None:
    await wait_until(check, "the descheduler's caches", 10)


@pytest.fixture(name="running_state", params=["msgspec", "json"])
async def _running_state(
    request: pytest.FixtureRequest, fake_apiserver: FakeApiServer, kube_api: KubeApi
) -> AsyncIterator[ClusterState]:
    fake_apiserver.create(kubeobjects.node("n1", ready=True))
    fake_apiserver.create(kubeobjects.node("n2", ready=True))
    fake_apiserver.create(owned_pod("a", "n1", "web"))
    fake_apiserver.create(owned_pod("b", "n2", "web"))
    fake_apiserver.create(kubeobjects.pdb("web", match_labels={"app": "web"}, min_available=1))
    decoding: Decoding = request.param
    state = ClusterState(kube_api, PROJECTIONS, decoding=decoding, read_timeout=5)
    tasks = [asyncio.create_task(reflector.run()) for reflector in state.reflectors]
    try:
        async with asyncio.timeout(10):
            await state.wait_synced()
        yield state
    finally:
        for reflector in state.reflectors:
            reflector.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)


async def test_caches_list_each_kind_once_from_the_watch_cache(
    running_state: ClusterState, fake_apiserver: FakeApiServer
) -> None:
    """Each kind is listed exactly once, at resourceVersion=0, and never per node."""
    assert running_state.synced
    lists = [r for r in fake_apiserver.requests(method="GET") if not r.is_watch]
    paths = sorted(r.path for r in lists)
    assert paths == [
        "/api/v1/namespaces",
        "/api/v1/nodes",
        "/api/v1/persistentvolumeclaims",
        "/api/v1/pods",
        "/api/v1/replicationcontrollers",
        "/apis/apps/v1/deployments",
        "/apis/apps/v1/replicasets",
        "/apis/apps/v1/statefulsets",
        "/apis/policy/v1/poddisruptionbudgets",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
    ]
    assert {r.query.get("resourceVersion") for r in lists} == {"0"}
    assert not any("fieldSelector" in r.query for r in lists)


async def test_workloads_are_cached_as_their_rollout_settings(
    running_state: ClusterState, fake_apiserver: FakeApiServer
) -> None:
    """Deployments, ReplicaSets, StatefulSets and ReplicationControllers are followed on
    their watches and kept as ``WorkloadInfo``; a snapshot holds them by UID, and says it
    holds every such kind in full."""
    deployment = fake_apiserver.create(
        kubeobjects.workload("Deployment", "web", replicas=12, max_unavailable="10%")
    )
    fake_apiserver.create(
        kubeobjects.workload(
            "ReplicaSet",
            "web-1",
            replicas=12,
            owner=kubeobjects.owner_ref("Deployment", "web", uid=deployment["metadata"]["uid"]),
        )
    )
    fake_apiserver.create(kubeobjects.workload("StatefulSet", "db", replicas=3))
    fake_apiserver.create(kubeobjects.workload("ReplicationController", "legacy", replicas=2))
    await _until(lambda: len(running_state.snapshot(0.0).workloads) == 4)
    snapshot = running_state.snapshot(0.0)
    by_name = {w.name: w for w in snapshot.workloads.values()}
    assert by_name["web"] == WorkloadInfo(
        kind="Deployment",
        namespace="default",
        name="web",
        uid=deployment["metadata"]["uid"],
        replicas=12,
        strategy="RollingUpdate",
        max_unavailable="10%",
    )
    controller = by_name["web-1"].controller
    assert controller is not None
    assert (controller.kind, controller.uid) == ("Deployment", deployment["metadata"]["uid"])
    assert (by_name["db"].kind, by_name["legacy"].replicas) == ("StatefulSet", 2)
    assert snapshot.workload_kinds == {
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
    }
    fake_apiserver.patch("deployments.apps", "web", {"spec": {"replicas": 3}}, "default")
    await _until(lambda: by_uid(running_state, deployment["metadata"]["uid"]).replicas == 3)


def by_uid(state: ClusterState, uid: str) -> WorkloadInfo:
    return state.snapshot(0.0).workloads[uid]


async def test_without_implicit_budgets_no_workload_is_listed(
    fake_apiserver: FakeApiServer, kube_api: KubeApi
) -> None:
    """Implicit budgets off: the workload caches do not exist, so nothing of theirs is
    listed or watched (nor needs RBAC)."""
    state = ClusterState(kube_api, PROJECTIONS, workloads=False, read_timeout=5)
    assert state.workloads == ()
    assert all(r.resource.group != "apps" for r in state.reflectors)
    assert state.snapshot(0.0).workload_kinds == frozenset()


async def test_caches_keep_projections_indexed_by_node(running_state: ClusterState) -> None:
    """The caches hold compact projections (never the API's JSON), pods by spec.nodeName."""
    pods = running_state.pods.by_index("n1")
    assert [pod.name for pod in pods] == ["a"]
    assert all(isinstance(pod, PodInfo) for pod in running_state.pods.store.values())
    assert all(isinstance(node, NodeInfo) for node in running_state.nodes.store.values())
    budgets = list(running_state.disruption_budgets.store.values())
    assert all(isinstance(budget, DisruptionBudget) for budget in budgets)
    assert running_state.priority_classes.store["system-node-critical"] == 2000001000
    snapshot = running_state.snapshot(now=1000.0)
    assert {node: [p.name for p in pods] for node, pods in snapshot.pods_by_node.items()} == {
        "n1": ["a"],
        "n2": ["b"],
    }
    assert snapshot.now == 1000.0
    assert [b.name for b in snapshot.disruption_budgets["default"]] == ["web"]


async def test_index_follows_watch_events(
    running_state: ClusterState, fake_apiserver: FakeApiServer
) -> None:
    """A new pod joins its node's bucket and a deleted one leaves it, by watch."""
    fake_apiserver.create(owned_pod("c", "n2", "web"))
    fake_apiserver.delete("pods", "a", "default", grace_period_seconds=0)
    await _until(
        lambda: (
            sorted(p.name for p in running_state.pods.by_index("n2")) == ["b", "c"]
            and not running_state.pods.by_index("n1")
        )
    )
    assert "n1" not in running_state.snapshot(now=0).pods_by_node


async def test_snapshot_does_not_move_with_the_caches(
    running_state: ClusterState, fake_apiserver: FakeApiServer
) -> None:
    """A snapshot taken before a change keeps the state it was taken from."""
    before = running_state.snapshot(now=0)
    fake_apiserver.create(owned_pod("late", "n1", "web"))
    await _until(lambda: len(running_state.pods.by_index("n1")) == 2)
    assert [p.name for p in before.pods_on("n1")] == ["a"]


async def test_caches_relist_after_410(fake_apiserver: FakeApiServer, kube_api: KubeApi) -> None:
    """A pod watch from a compacted resourceVersion gets 410; the cache relists (a consistent
    read), catches up, and still holds projections only."""
    fake_apiserver.create(owned_pod("a", "n1", "web"))
    fake_apiserver.faults.add("GET", r"/api/v1/pods$", status=503, times=1, watch=True)
    state = ClusterState(kube_api, PROJECTIONS, read_timeout=5)
    task = asyncio.create_task(state.pods.run())
    try:
        async with asyncio.timeout(10):
            await state.pods.synced.wait()
        # While the pod watch backs off after its 503, history moves on and is compacted.
        await asyncio.to_thread(
            fake_apiserver.wait_for_request, lambda r: r.is_watch and r.status == 503, 10
        )
        fake_apiserver.create(owned_pod("while-away", "n2", "web"))
        fake_apiserver.compact()
        await _until(lambda: "default/while-away" in state.pods.store)
        lists = [
            r
            for r in fake_apiserver.requests(method="GET", path_contains="/pods")
            if not r.is_watch
        ]
        assert [r.query.get("resourceVersion") for r in lists] == ["0", None]
        assert [p.name for p in state.pods.by_index("n2")] == ["while-away"]
        assert all(isinstance(pod, PodInfo) for pod in state.pods.store.values())
    finally:
        state.pods.stop()
        await asyncio.wait_for(task, 10)


def test_snapshot_takes_node_usage_from_the_injected_source(kube_api: KubeApi) -> None:
    """The NodeReports usage comes from the source the app injects, read at snapshot time."""
    reports = {
        "n1": NodeUsage(
            node="n1",
            usage={"cpu": 1500, "memory": 2**30},
            pod_usage={},
            stale=False,
            shutting_down=False,
            gated=False,
            agent_stopped=False,
        )
    }
    source: dict[str, NodeUsage] = {}
    state = ClusterState(kube_api, PROJECTIONS, usage=lambda _nodes: source)
    assert state.snapshot(now=1).node_usage == {}
    source.update(reports)
    assert state.snapshot(now=2).node_usage == reports


def test_a_paged_pod_list_is_projected_page_by_page(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A relist without a resourceVersion comes in pages: each page's pods are projected as
    it is read, and every pod of every page is in the answer, once."""
    for index in range(7):
        fake_apiserver.create(owned_pod(f"p{index}", "n1", "web"))
    projector = PodListProjector()
    listing = kube_api.list(PODS, page_size=3, decode=projector.decode_page)
    entries = listing["entries"]
    assert sorted(key for key, _ in entries) == [f"default/p{index}" for index in range(7)]
    assert all(pod.owners[0].name == "web" for _, pod in entries)
    pages = [r for r in fake_apiserver.requests(method="GET") if not r.is_watch]
    assert len(pages) == 3


async def test_a_pod_that_cannot_be_projected_is_skipped_and_counted(
    fake_apiserver: FakeApiServer, kube_api: KubeApi
) -> None:
    """One pod the list's projection rejects (an owner reference's ``controller`` that is
    not a boolean) is left out and counted; the other pods are cached."""
    fake_apiserver.create(kubeobjects.node("n1", ready=True))
    fake_apiserver.create(owned_pod("good", "n1", "web"))
    odd = owned_pod("odd", "n1", "web")
    odd["metadata"]["ownerReferences"][0]["controller"] = "yes"
    fake_apiserver.create(odd)
    state = ClusterState(kube_api, PROJECTIONS, read_timeout=5)
    task = asyncio.create_task(state.pods.run())
    try:
        await _until(state.pods.synced.is_set)
        assert list(state.pods.store) == ["default/good"]
        assert state.pods.skipped == 1
    finally:
        state.pods.stop()
        await asyncio.wait_for(task, 10)
