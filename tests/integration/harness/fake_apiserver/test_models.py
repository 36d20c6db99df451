"""Objects the fake generates itself must deserialize into the official client's strict models."""

from __future__ import annotations

from kubernetes import client

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import crd, pdb, pod


def test_generated_objects_deserialize_into_typed_models(
    fake_apiserver: FakeApiServer, fake_api_client: client.ApiClient
) -> None:
    """Kubelet-made nodes and pod statuses, PDB and CRD statuses parse as typed models."""
    kubelet = fake_apiserver.kubelet("node-a")
    fake_apiserver.create(pod("ready", node="node-a", labels={"app": "x"}))
    fake_apiserver.create(pod("done", node="node-a"))
    kubelet.set_ready("default", "ready")
    kubelet.set_phase("default", "done", "Failed", exit_code=3)
    fake_apiserver.create(pdb("budget", match_labels={"app": "x"}, min_available=1))
    core = client.CoreV1Api(fake_api_client)
    extensions = client.ApiextensionsV1Api(fake_api_client)
    extensions.create_custom_resource_definition(crd("example.com", "Widget", "widgets"))

    node = core.read_node("node-a")
    assert node.status.node_info.kubelet_version.startswith("v1.")
    pods = {p.metadata.name: p for p in core.list_namespaced_pod("default").items}
    assert pods["ready"].status.container_statuses[0].state.running is not None
    assert pods["done"].status.container_statuses[0].state.terminated.exit_code == 3
    budget = client.PolicyV1Api(fake_api_client).read_namespaced_pod_disruption_budget(
        "budget", "default"
    )
    assert budget.status.disruptions_allowed == 0
    assert budget.status.conditions[0].type == "DisruptionAllowed"
    definition = extensions.read_custom_resource_definition("widgets.example.com")
    assert {c.type: c.status for c in definition.status.conditions}["Established"] == "True"
    assert definition.status.accepted_names.kind == "Widget"
    assert [ns.status.phase for ns in core.list_namespace().items] == ["Active"] * 4
