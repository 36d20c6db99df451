"""The descheduler's own address: /healthz, /readyz and upstream-named metrics."""

import asyncio
from pathlib import Path

from agent.kube.api import KubeApi
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.harness.localhttp import get
from tests.harness.ports import free_port
from tests.harness.waiting import wait_until
from tests.integration.descheduler.conftest import duplicates_cluster


async def test_probes_and_metrics_of_a_looping_descheduler(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """Once its caches synced and a cycle ran, /readyz and /healthz answer 200 and /metrics
    carries descheduler_build_info, the loop and strategy durations and the evictions."""
    duplicates_cluster(fake_apiserver, protected=False)
    base = f"http://127.0.0.1:{free_port()}"
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_live(
            policy_file,
            kube_api,
            stop=stop,
            descheduling_interval=3600,
            metrics_bind_address=base[len("http://") :],
        )
    )
    try:

        async def body(path: str) -> tuple[int, str]:
            return await asyncio.to_thread(get, base + path)

        await wait_until(
            lambda: "descheduler_loop_duration_seconds_count 1.0" in get(base + "/metrics")[1],
            "the first cycle in /metrics",
            10,
        )
        status, text = await body("/metrics")
        assert status == 200
        for name in (
            "descheduler_build_info{",
            "descheduler_loop_duration_seconds_count 1.0",
            'descheduler_strategy_duration_seconds_count{profile="ProfileName",'
            'strategy="RemoveDuplicates"} 1.0',
            "descheduler_pods_evicted_total{",
        ):
            assert name in text
        assert (await body("/readyz"))[0] == 200
        assert (await body("/healthz"))[0] == 200
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 20) == 0


async def test_readyz_fails_until_the_caches_synced(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """While the pod list fails, /readyz answers 503 naming the pod cache."""
    fake_apiserver.faults.add("GET", r"/api/v1/pods$", status=503, times=None, watch=False)
    base = f"http://127.0.0.1:{free_port()}"
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_live(
            policy_file,
            kube_api,
            stop=stop,
            descheduling_interval=3600,
            metrics_bind_address=base[len("http://") :],
        )
    )
    try:
        await wait_until(lambda: get(base + "/readyz")[0] == 503, "readyz to answer", 10)
        status, text = get(base + "/readyz")
        assert "[-]watch:descheduler-pods" in text
        assert status == 503
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
