"""The descheduler tests: ``kube_api`` as the descheduler, a kubeconfig, a policy, a cluster,
and our taint record on its Lease."""

from pathlib import Path

import pytest

from agent.descheduler.cache.taintrecord import TAINT_RECORD_ANNOTATION, decode_record
from agent.descheduler.live.recordedtaints import RecordedTaints, key_of
from agent.descheduler.model.taintrecord import RecordedTaint, TaintRecord
from agent.descheduler.options import LEASE_NAME, LEASE_NAMESPACE
from agent.kube.client import AsyncKube
from agent.kube.connection import DESCHEDULER, Component
from agent.kube.lease import KubeLeaseApi
from agent.kube.leaseannotations import LeaseAnnotations
from agent.kube.ownedtaints import OwnedTaints
from agent.kubesemantics.taintownership import OwnedTaint
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


LOW_NODE_UTILIZATION = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: balance
    pluginConfig:
      - name: "LowNodeUtilization"
        args:
          thresholds: {"cpu": 20}
          targetThresholds: {"cpu": 50}
    plugins:
      balance:
        enabled: ["LowNodeUtilization"]
"""
"""LowNodeUtilization alone, 20 % and 50 % of cpu."""

COOLDOWN_POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: guarded
    pluginConfig:
    - name: "RemoveDuplicates"
      args:
        cooldownSeconds: 3600
    plugins:
      balance:
        enabled: ["RemoveDuplicates"]
"""
"""RemoveDuplicates with an hour's churn-guard cooldown."""


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


def taint_record(server: FakeApiServer) -> TaintRecord:
    """Our taint record as the descheduler's Lease holds it now (empty without a Lease)."""
    lease = server.try_get("leases", LEASE_NAME, LEASE_NAMESPACE) or {}
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    return decode_record(annotations.get(TAINT_RECORD_ANNOTATION))


def recorded_taints(kube: AsyncKube) -> RecordedTaints:
    """The product's own taint writer over the descheduler's Lease (no leader election)."""
    return RecordedTaints(
        OwnedTaints(kube), LeaseAnnotations(KubeLeaseApi(kube, LEASE_NAMESPACE, LEASE_NAME))
    )


async def left_in_flight(
    kube: AsyncKube, node: str, owned: OwnedTaint, entry: RecordedTaint | None = None
) -> None:
    """What a run killed mid-way leaves: the taint recorded as ours on the Lease, and on the
    node with our mark, written by the product's own code."""
    taints = recorded_taints(kube)
    await taints.claim([(key_of(node, owned), entry or RecordedTaint(owned.value))])
    await taints.add(node, owned)
