"""List+watch caches against the fake API server: sync, events, 410 relist, reconnects, and
watches that end quietly."""

import asyncio
from collections.abc import Callable

from structlog.testing import capture_logs

from agent.kube.api import KubeApi
from agent.kube.backoff import Backoff
from agent.kube.nodestate import NodeState
from agent.kube.reflector import Reflector
from agent.kube.resources import NODE_REPORTS, PODS
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.waiting import wait_until


async def _until(check: Callable[[], bool], timeout: float = 10) -> None:
    await wait_until(check, "the reflector's store", timeout)


def _pods(kube_api: KubeApi, **kwargs: object) -> Reflector:
    return Reflector(kube_api, PODS, name="pods", read_timeout=5, **kwargs)  # type: ignore[arg-type]


async def test_reflector_syncs_then_follows_events(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """The first list fills the store; later adds, updates and deletes arrive by watch."""
    fake_apiserver.create(kubeobjects.pod("before", node="n1"))
    reflector = _pods(kube_api)
    seen: list[str] = []
    reflector.subscribe(lambda kind, _obj: seen.append(kind))
    task = asyncio.create_task(reflector.run())
    try:
        async with asyncio.timeout(10):
            await reflector.synced.wait()
        assert set(reflector.store) == {"default/before"}
        fake_apiserver.create(kubeobjects.pod("after", node="n1"))
        fake_apiserver.patch("pods", "before", {"metadata": {"labels": {"x": "1"}}}, "default")
        fake_apiserver.delete("pods", "after", "default", grace_period_seconds=0)
        await _until(lambda: "DELETED" in seen)
        assert set(reflector.store) == {"default/before"}
        assert reflector.store["default/before"]["metadata"]["labels"] == {"x": "1"}
        assert seen[0] == "SYNCED"
        first_list = fake_apiserver.requests(method="GET", path_contains="/pods")[0]
        assert first_list.query.get("resourceVersion") == "0"
    finally:
        reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_reflector_relists_after_410(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A watch from a compacted resourceVersion gets 410; the reflector relists consistently."""
    fake_apiserver.faults.add("GET", r"/pods$", status=503, times=1, watch=True)
    reflector = _pods(kube_api)
    task = asyncio.create_task(reflector.run())
    try:
        async with asyncio.timeout(10):
            await reflector.synced.wait()
        # The first watch failed; while the reflector backs off, history moves on and is
        # compacted, so its re-watch from the listed resourceVersion is too old.
        await asyncio.to_thread(
            fake_apiserver.wait_for_request, lambda r: r.is_watch and r.status == 503, 10
        )
        fake_apiserver.create(kubeobjects.pod("while-away", node="n1"))
        fake_apiserver.compact()
        await _until(lambda: "default/while-away" in reflector.store)
        lists = [
            r
            for r in fake_apiserver.requests(method="GET", path_contains="/pods")
            if not r.is_watch
        ]
        # The first list is served from the watch cache; the relist is a consistent read.
        assert [r.query.get("resourceVersion") for r in lists] == ["0", None]
    finally:
        reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_reflector_recovers_from_an_outage(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """After the API server comes back, events written meanwhile are seen."""
    reflector = _pods(kube_api)
    task = asyncio.create_task(reflector.run())
    try:
        async with asyncio.timeout(10):
            await reflector.synced.wait()
        with fake_apiserver.outage(mode="status", status=503):
            await asyncio.sleep(0.2)  # an outage lasts a while; the recovery below is positive
        fake_apiserver.create(kubeobjects.pod("later", node="n1"))
        await _until(lambda: "default/later" in reflector.store, timeout=20)
    finally:
        reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_a_silent_watch_is_reopened_after_the_read_timeout(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A watch that stays silent past the time the server was asked to end it (a hung
    server) fails on the read timeout, which allows that much and a little more; the
    reflector reconnects."""
    fake_apiserver.faults.stall_watches(r"/pods$", times=1)
    # Requests may take far longer than the wait below: only the watch's own read timeout
    # can end the stalled watch in time.
    patient = KubeApi(kube_api.api_client, request_timeout=60.0)
    reflector = Reflector(patient, PODS, name="pods", watch_timeout=1, read_timeout=0.5)
    task = asyncio.create_task(reflector.run())
    try:
        async with asyncio.timeout(10):
            await reflector.synced.wait()
        await asyncio.to_thread(
            fake_apiserver.wait_for_request, lambda r: r.is_watch and r.path.endswith("/pods"), 10
        )
        fake_apiserver.create(kubeobjects.pod("after-the-stall", node="n1"))
        await _until(lambda: "default/after-the-stall" in reflector.store)
        watches = [r for r in fake_apiserver.requests(path_contains="/pods") if r.is_watch]
        assert len(watches) >= 2  # the stalled one, then the one that delivered the pod
    finally:
        reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_stop_is_prompt_on_a_quiet_watch(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """Stopping does not wait for the next event or bookmark on an idle watch."""
    reflector = _pods(kube_api, watch_timeout=300)
    task = asyncio.create_task(reflector.run())
    async with asyncio.timeout(10):
        await reflector.synced.wait()
    await asyncio.to_thread(fake_apiserver.wait_for_watches, "pods")
    reflector.stop()
    await asyncio.wait_for(task, 3)


async def test_node_state_holds_this_nodes_pods_and_node(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """NodeState sees only pods bound to its node, plus its Node, and reports changes."""
    fake_apiserver.kubelet("n1")
    fake_apiserver.create(kubeobjects.pod("mine", node="n1"))
    fake_apiserver.create(kubeobjects.pod("elsewhere", node="n2"))
    state = NodeState(kube_api, "n1", read_timeout=5)
    tasks = [asyncio.create_task(r.run()) for r in state.reflectors]
    try:
        async with asyncio.timeout(10):
            await state.wait_synced()
        assert [p["metadata"]["name"] for p in state.pod_list()] == ["mine"]
        node = state.node_object()
        assert node is not None
        assert node["metadata"]["name"] == "n1"
        version = state.version
        fake_apiserver.create(kubeobjects.pod("new", node="n1"))
        assert await state.wait_changed(version, timeout=10) != version
    finally:
        for reflector in state.reflectors:
            reflector.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)


async def test_an_idle_watch_ends_at_the_servers_timeout_never_the_clients(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """On a quiet resource the server ends each watch at the timeout it was asked for, which
    is shorter than the client's read timeout: the watch is reopened with nothing logged."""
    reflector = Reflector(kube_api, PODS, name="pods", watch_timeout=1, read_timeout=0.5)
    task = asyncio.create_task(reflector.run())
    try:
        with capture_logs() as logs:
            async with asyncio.timeout(10):
                await reflector.synced.wait()
            await _until(
                lambda: (
                    sum(1 for r in fake_apiserver.requests(path_contains="/pods") if r.is_watch)
                    >= 3
                )
            )
        watches = [r for r in fake_apiserver.requests(path_contains="/pods") if r.is_watch]
        assert all(1 <= int(r.query["timeoutSeconds"]) <= 2 for r in watches)
        assert [e for e in logs if e["log_level"] in ("warning", "error")] == []
    finally:
        reflector.stop()
        await asyncio.wait_for(task, 10)


async def test_the_same_failure_is_said_once_then_quietly(
    kube_api: KubeApi, fake_apiserver: FakeApiServer
) -> None:
    """A resource that is not served (a CRD not installed: 404 on every try) is warned about
    once; the retries after it are logged at debug level only."""
    reflector = Reflector(
        kube_api, NODE_REPORTS, name="nodereports", backoff=Backoff(initial=0.01, cap=0.02)
    )
    task = asyncio.create_task(reflector.run())
    try:
        with capture_logs() as logs:
            await _until(
                lambda: sum(1 for r in fake_apiserver.requests(path_contains="/nodereports")) >= 4
            )
        failures = [e for e in logs if e.get("reflector") == "nodereports"]
        assert [e["log_level"] for e in failures][:1] == ["warning"]
        assert {e["log_level"] for e in failures[1:]} == {"debug"}
        assert len(failures) >= 3
    finally:
        reflector.stop()
        await asyncio.wait_for(task, 10)
