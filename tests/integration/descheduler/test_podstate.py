"""The pod-state plugins end to end: statuses the fake kubelet reports, read through the
list+watch caches, decide evictions sent through the eviction API."""

from pathlib import Path

from agent.kube.api import KubeApi
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.integration.descheduler.conftest import owned_pod

POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: podstate
  pluginConfig:
  - name: RemovePodsHavingTooManyRestarts
    args: {podRestartThreshold: 5, states: [Running]}
  - name: RemoveFailedPods
    args: {minPodLifetimeSeconds: 0, exitCodes: [1], reasons: [Error]}
  plugins:
    deschedule:
      enabled: [RemovePodsHavingTooManyRestarts, RemoveFailedPods]
"""


def _evictions(server: FakeApiServer) -> list[str]:
    return [
        request.path.split("/")[-2]
        for request in server.requests(method="POST")
        if request.path.endswith("/eviction")
    ]


async def test_restarting_and_failed_pods_are_evicted_through_the_api(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """A Running pod restarted 6 times and a pod Failed with exit code 1 are evicted; a pod
    restarted 4 times and one Failed with exit code 0 stay."""
    kubelets = {name: fake_apiserver.kubelet(name) for name in ("n1", "n2")}
    for name, restarts in (("crashy", 6), ("steady", 4)):
        pod = owned_pod(name, "n1", "web")
        pod["status"] = {"containerStatuses": [{"name": "app", "restartCount": restarts}]}
        fake_apiserver.create(pod)
        kubelets["n1"].set_ready("default", name)  # keeps the restart count it finds
    for name, code in (("failed", 1), ("done", 0)):
        fake_apiserver.create(owned_pod(name, "n2", "batch", kind="Job"))
        kubelets["n2"].set_phase("default", name, "Failed", exit_code=code)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(POLICY)
    code = await run_live(policy_file, kube_api)
    assert code == 0
    assert sorted(_evictions(fake_apiserver)) == ["crashy", "failed"]
