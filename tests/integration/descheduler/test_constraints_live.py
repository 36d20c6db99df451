"""The constraint plugins end to end: objects from the API server, evictions through it."""

from pathlib import Path

from agent.kube.api import KubeApi
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.integration.descheduler.conftest import owned_pod

POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: constraints
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
    balance:
      enabled: [RemovePodsViolatingTopologySpreadConstraint]
"""
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
SPREAD = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


def _cluster(server: FakeApiServer) -> None:
    """n1 in zone a holds all 3 web pods (spread over zones, maxSkew 1); zone b has n2, and
    n3, which has gained a taint its batch pod does not tolerate."""
    for name, zone in (("n1", "a"), ("n2", "b"), ("n3", "b")):
        node = kubeobjects.node(
            name,
            labels={"zone": zone, "kubernetes.io/hostname": name},
            taints=[TAINT] if name == "n3" else [],
            ready=True,
            cpu="4",
            memory="16Gi",
            pods="110",
        )
        server.create(node)
    kubelets = {name: server.kubelet(name) for name in ("n1", "n2", "n3")}
    for index in range(3):
        pod = owned_pod(f"web-{index}", "n1", "web")
        pod["spec"]["topologySpreadConstraints"] = [SPREAD]
        server.create(pod)
        kubelets["n1"].set_ready("default", f"web-{index}")
    server.create(owned_pod("batch-0", "n3", "batch"))
    kubelets["n3"].set_ready("default", "batch-0")


async def test_taint_and_spread_violations_are_evicted_through_the_api(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """One cycle evicts the pod that does not tolerate its node's taint and the one web pod
    that brings the zones within maxSkew (its spread constraint read from the API's bytes),
    through the eviction API, and exits 0."""
    _cluster(fake_apiserver)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(POLICY)
    code = await run_live(policy_file, kube_api)
    assert code == 0
    evicted = [
        request.path.split("/")[-2]
        for request in fake_apiserver.requests(method="POST")
        if request.path.endswith("/eviction")
    ]
    assert sorted(evicted) == ["batch-0", "web-2"]  # the pool sends them concurrently
