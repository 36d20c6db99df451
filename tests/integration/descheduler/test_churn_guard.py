"""The churn guard outlives the process: one-shot runs (a Job, a CronJob) share its memory.

Without leader election there is no elector to write through, so a policy that sets
``cooldownSeconds`` keeps the memory on the Lease's annotation with guarded writes. The
second run below is a new ``run_descheduler``, as the next CronJob run would be.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.kube.api import KubeApi
from agent.kube.evictionmemory import RECENT_EVICTIONS_ANNOTATION
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.integration.descheduler.conftest import COOLDOWN_POLICY, owned_pod


def _evicted(server: FakeApiServer) -> list[str]:
    return sorted(
        request.path.split("/")[-2]
        for request in server.requests(method="POST")
        if request.path.endswith("/eviction")
    )


def _web_pods_on_n1(server: FakeApiServer, names: list[str]) -> None:
    kubelet = server.kubelet("n1") if not server.exists("nodes", "n1") else None
    for name in names:
        server.create(owned_pod(name, "n1", "web"))
        if kubelet is not None:
            kubelet.set_ready("default", name)


async def _run_once(policy_file: Path, api: KubeApi) -> int:
    return await run_live(policy_file, api)


async def test_a_second_one_shot_run_remembers_the_owner_and_evicts_nothing(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """Run 1 evicts one web pod (the guard then holds web for the rest of the cooldown) and
    records web on the Lease; the ReplicaSet puts a new pod back on the same node; run 2 (a
    new process's run) leaves web's surplus alone, within the cooldown."""
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(COOLDOWN_POLICY)
    for name in ("n2", "n3"):
        fake_apiserver.kubelet(name)
    _web_pods_on_n1(fake_apiserver, ["web-0", "web-1", "web-2"])
    assert await _run_once(policy_file, kube_api) == 0
    first = _evicted(fake_apiserver)
    assert first == ["web-1"]
    lease = fake_apiserver.get("leases", "descheduler", "kube-system")
    memory = json.loads(lease["metadata"]["annotations"][RECENT_EVICTIONS_ANNOTATION])
    assert list(memory) == ["uid-web"]

    _web_pods_on_n1(fake_apiserver, ["web-3"])
    assert await _run_once(policy_file, kube_api) == 0
    assert _evicted(fake_apiserver) == first


async def test_without_a_cooldown_nothing_is_written_to_the_lease(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A policy with no cooldown keeps upstream's behaviour: no Lease is created or written."""
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(COOLDOWN_POLICY.replace("cooldownSeconds: 3600", "cooldownSeconds: 0"))
    for name in ("n2", "n3"):
        fake_apiserver.kubelet(name)
    _web_pods_on_n1(fake_apiserver, ["web-0", "web-1", "web-2"])
    assert await _run_once(policy_file, kube_api) == 0
    assert _evicted(fake_apiserver) == ["web-1", "web-2"]
    assert not fake_apiserver.exists("leases", "descheduler", "kube-system")
