"""A KubeApi on the official client pointed at the fake API server, and cluster builders."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.connection import DESCHEDULER, connect
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import owner_ref

README_REMOVE_DUPLICATES = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: ProfileName
    pluginConfig:
    - name: "RemoveDuplicates"
      args:
        excludeOwnerKinds:
        - "ReplicaSet"
    plugins:
      balance:
        enabled:
          - "RemoveDuplicates"
"""
"""The RemoveDuplicates example of upstream's README, unchanged."""


@pytest.fixture
def kubeconfig(fake_apiserver: FakeApiServer, tmp_path: Path) -> Path:
    return fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kube_api(kubeconfig: Path) -> Iterator[KubeApi]:
    # The descheduler's User-Agent: its requests count towards its RBAC proof.
    connection = connect(str(kubeconfig), component=DESCHEDULER)
    assert connection is not None
    api = KubeApi(connection.api_client, request_timeout=5.0)
    yield api
    api.close()


@pytest.fixture
def async_kube(kube_api: KubeApi) -> Iterator[AsyncKube]:
    kube = AsyncKube(kube_api)
    yield kube
    kube.close()


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(README_REMOVE_DUPLICATES)
    return path


def owned_pod(name: str, node: str, owner: str, *, kind: str = "ReplicationController") -> dict:
    """A pod of ``owner`` (controller reference), labelled ``app=<owner>``, bound to ``node``."""
    ref = owner_ref(kind, owner, uid=f"uid-{owner}")
    return kubeobjects.pod(name, node, labels={"app": owner}, owner=ref)


def duplicates_cluster(server: FakeApiServer, *, protected: bool = True) -> None:
    """Three Ready nodes; ``web`` has 3 Running+Ready pods on n1 (2 to evict); ``db`` has 3
    on n2 under a PDB allowing no disruption (2 planned, both blocked) when ``protected``."""
    kubelets = {name: server.kubelet(name) for name in ("n1", "n2", "n3")}
    for owner, node in (("web", "n1"), ("db", "n2")):
        for index in range(3):
            server.create(owned_pod(f"{owner}-{index}", node, owner))
            kubelets[node].set_ready("default", f"{owner}-{index}")
    if protected:
        server.create(kubeobjects.pdb("db", match_labels={"app": "db"}, min_available=3))
