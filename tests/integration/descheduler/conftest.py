"""The descheduler tests: ``kube_api`` as the descheduler, a kubeconfig, a policy, a cluster."""

from pathlib import Path

import pytest

from agent.kube.connection import DESCHEDULER, Component
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
def kube_component() -> Component:
    """``kube_api`` here is the descheduler's: its requests count towards its RBAC proof."""
    return DESCHEDULER


@pytest.fixture
def kube_request_timeout() -> float:
    return 5.0


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
